//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// startPal runs pal-kube scheduler as a process with the given config body;
// when killAfter > 0 it kills itself with SIGKILL right after that many
// binds. The returned channel yields when it exits.
func (e *env) startPal(config string, killAfter int) (*exec.Cmd, *strings.Builder, <-chan error) {
	e.t.Helper()
	cfgFile := filepath.Join(e.t.TempDir(), "pal.yaml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o644); err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(kubeBin, "scheduler", "--config", cfgFile, "--kubeconfig", e.cl.Kubeconfig, "--log-json")
	cmd.Env = os.Environ()
	if killAfter > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", kube.KillAfterBindsEnv, killAfter))
	}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	return cmd, out, done
}

// waitKilled waits until the process died of SIGKILL.
func (e *env) waitKilled(cmd *exec.Cmd, out *strings.Builder, done <-chan error, limit time.Duration) {
	e.t.Helper()
	select {
	case err := <-done:
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			e.t.Fatalf("scheduler did not die by SIGKILL (%v); output:\n%s", err, out.String())
		}
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		e.t.Fatalf("scheduler never reached the bind it was to die after; output:\n%s", out.String())
	}
}

// gangWhole checks the all-or-nothing rule on a gang's pods as the
// apiserver holds them: every member bound where the bind-info of the
// bound members says (and all of those agree), or none bound. It returns
// how many are bound.
func (e *env) gangWhole(names []string) int {
	e.t.Helper()
	var rec *kube.BindInfo
	bound := 0
	for _, n := range names {
		p := e.pod(n)
		if p == nil || p.Spec.NodeName == "" {
			continue
		}
		bound++
		bi, err := kube.ParseBindInfo(p.Annotations[kube.AnnBindInfo])
		if err != nil {
			e.t.Fatalf("%s: bind-info: %v", n, err)
		}
		if rec == nil {
			rec = bi
		} else if bi.Round != rec.Round {
			e.t.Errorf("%s bound in round %s, another member in round %s", n, bi.Round, rec.Round)
		}
		want, ok := bi.Pods[n]
		if !ok || p.Spec.NodeName != want.Node || p.Annotations[kube.AnnGPUIndices] != kube.FormatIndices(want.GPUs) {
			e.t.Errorf("%s bound to %s GPUs %s, its bind-info says %+v", n, p.Spec.NodeName, p.Annotations[kube.AnnGPUIndices], want)
		}
	}
	if bound != 0 && bound != len(names) {
		e.t.Errorf("gang partly bound: %d of %d members", bound, len(names))
	}
	return bound
}

// boundInNamespace counts the bound pods of the test's namespace in one
// list.
func (e *env) boundInNamespace() int {
	e.t.Helper()
	l, err := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, p := range l.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func (e *env) lease() *coordv1.Lease {
	l, err := e.cs.CoordinationV1().Leases("pal-system").Get(context.Background(), "pal-scheduler", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

// kill -9 of the leader in the middle of a gang's binds, with a standby
// replica: the standby takes the Lease within leaseDuration +
// retryPeriod of the kill (client-go's elector waits out the lease
// duration from when it last saw the Lease renewed; PAL has it poll five
// times per retryPeriod, so seeing the last renewal late and finding the
// Lease expired late add at most 2 x 2.2 / 5 of a retryPeriod),
// completes the gang exactly as the dead leader's bind-info recorded,
// binds a gang that came meanwhile, and no GPU is given twice.
func TestLeaderKilledStandbyTakesOver(t *testing.T) {
	e := newEnv(t, 2, 8)
	const leaseDur, retry = 4 * time.Second, 500 * time.Millisecond
	le := fmt.Sprintf("leaderElection: {enabled: true, leaseDuration: %v, renewDeadline: 3s, retryPeriod: %v}\n", leaseDur, retry)
	// One bind at a time, so that the crash lands after 3 of 8.
	leader, out, done := e.startPal("period: 300ms\narrivalDelay: 50ms\nbindWorkers: 1\nmetricsAddr: \"\"\n"+le, 3)
	e.eventually(30*time.Second, "the first replica holds the Lease", func() bool {
		l := e.lease()
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	})
	first := *e.lease().Spec.HolderIdentity
	cfg := testConfig()
	cfg.LeaderElection.Enabled = true
	cfg.LeaderElection.LeaseDuration = kube.Duration{Duration: leaseDur}
	cfg.LeaderElection.RenewDeadline = kube.Duration{Duration: 3 * time.Second}
	cfg.LeaderElection.RetryPeriod = kube.Duration{Duration: retry}
	standby, _ := e.runScheduler(cfg, "standby")
	time.Sleep(time.Second) // the standby's informers sync and it watches the Lease
	if standby.Binds() != 0 {
		t.Fatalf("the standby bound %d pods while the other replica led", standby.Binds())
	}
	names := e.gang("a", 8, 1, nil)
	e.waitKilled(leader, out, done, 60*time.Second)
	killed := time.Now()
	if n := e.countBound(names...); n != 3 {
		t.Fatalf("%d of 8 members bound when the leader died, want exactly 3", n)
	}
	late := e.gang("b", 4, 2, nil)
	e.eventually(leaseDur+5*retry+5*time.Second, "the standby holds the Lease", func() bool {
		l := e.lease()
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != first
	})
	took := time.Since(killed)
	t.Logf("the standby led %.2f s after the leader was killed (leaseDuration %v, retryPeriod %v)", took.Seconds(), leaseDur, retry)
	// The test's own poll of the Lease (100 ms apart, one GET each) and
	// the standby's GET and UPDATE on a loaded machine get 300 ms.
	if bound := leaseDur + retry; took > bound+300*time.Millisecond {
		t.Errorf("takeover took %v, more than leaseDuration + retryPeriod (%v) and 300 ms of polling", took, bound)
	}
	e.eventually(20*time.Second, "both gangs bound by the new leader", func() bool { return e.bound(append(names, late...)...) })
	time.Sleep(time.Second)
	if e.gangWhole(names) != 8 || e.gangWhole(late) != 4 {
		t.Fatal("a gang is not whole")
	}
	if got := standby.Binds(); got != 5+4 {
		t.Errorf("the new leader made %d binds, want the 5 the dead one left and the 4 of the late gang", got)
	}
	e.checkNoDoubleGPU()
}

// kill -9 of a lone scheduler in the middle of a 64-pod gang's binds
// (parallel bind workers, so more requests are in flight when it dies),
// then a restart: the gang ends whole, each member where the dead
// scheduler's bind-info put it, and nothing is bound twice.
func TestKillMidLargeGangThenRestart(t *testing.T) {
	e := newEnv(t, 8, 8)
	leader, out, done := e.startPal("period: 300ms\narrivalDelay: 200ms\nbindWorkers: 8\nmetricsAddr: \"\"\nleaderElection: {enabled: false}\n", 20)
	names := e.gang("big", 64, 1, nil)
	e.waitKilled(leader, out, done, 60*time.Second)
	time.Sleep(500 * time.Millisecond) // requests the apiserver took before the crash land
	atCrash := e.countBound(names...)
	if atCrash < 20 || atCrash == 64 {
		t.Fatalf("%d of 64 members bound after the crash, want at least the 20 it died after and not all", atCrash)
	}
	t.Logf("%d of 64 members bound when the scheduler died", atCrash)
	s, _ := e.runScheduler(testConfig(), "restarted")
	e.eventually(30*time.Second, "gang completed", func() bool { return e.bound(names...) })
	time.Sleep(time.Second)
	if e.gangWhole(names) != 64 {
		t.Fatal("gang not whole")
	}
	if got := s.Binds(); got != int64(64-atCrash) {
		t.Errorf("restarted scheduler made %d binds, want exactly the %d missing", got, 64-atCrash)
	}
	e.checkNoDoubleGPU()
}

// kube-apiserver killed with SIGKILL in the middle of a burst of binds
// and started again a few seconds later: the scheduler rides it out
// (binds whose answers were lost are settled by asking again once it is
// back), every gang pending at the crash is bound whole afterwards, no
// GPU index is given twice, and the scheduler still runs rounds and
// binds. Meanwhile its /readyz says the apiserver cannot be reached (it
// probes every second here), and says ok again once it is back.
func TestAPIServerRestartMidBurst(t *testing.T) {
	e := newEnv(t, 8, 8)
	var all [][]string
	for g := range 14 {
		all = append(all, e.gang(fmt.Sprintf("burst%02d", g), 4, 1, nil))
	}
	var names []string
	for _, g := range all {
		names = append(names, g...)
	}
	cfg := testConfig()
	// Slow binds (10 a second, on the binder's own client as pal-kube
	// makes it), so that the crash lands mid-burst: on the test's shared
	// client, 500 a second, all 56 were bound before the first look.
	cfg.BindQPS, cfg.BindBurst, cfg.BindWorkers = 10, 1, 4
	s, _ := e.runSchedulerOwnBinds(cfg, "pal", kube.WithAPIProbeEvery(time.Second))
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	e.eventually(30*time.Second, "the burst begins", func() bool { return e.boundInNamespace() >= 8 })
	if code, body := readyz(); code != 200 {
		t.Fatalf("before the crash /readyz answers %d %q", code, body)
	}
	if err := e.cl.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver killed; binds before: %d", s.Binds())
	var body string
	e.eventually(15*time.Second, "/readyz says the apiserver cannot be reached", func() bool {
		code, b := readyz()
		body = b
		return code == 503 && strings.HasPrefix(b, "the apiserver cannot be reached since ")
	})
	t.Logf("/readyz while it is down: %s", body)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := e.cl.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	atReturn := e.boundInNamespace()
	if atReturn == len(names) {
		t.Fatalf("all %d pods were bound before the crash: the test shows nothing", len(names))
	}
	t.Logf("kube-apiserver back; %d of %d pods bound", atReturn, len(names))
	e.eventually(15*time.Second, "/readyz ok again", func() bool { code, _ := readyz(); return code == 200 })
	e.eventually(45*time.Second, "every gang bound after the apiserver returned", func() bool { return e.bound(names...) })
	time.Sleep(time.Second)
	for _, g := range all {
		e.gangWhole(g)
	}
	e.checkNoDoubleGPU()
	if got := s.Binds(); got < int64(len(names)) {
		t.Errorf("the scheduler counts %d binds for %d bound pods", got, len(names))
	}
	// 56 of 64 GPUs are held: a new pod still finds one.
	e.keepsRunning(s, "after")
	e.checkNoDoubleGPU()
}

// The Lease taken from the leader in the middle of a burst of binds (as
// when the apiserver is too slow for its renewals: another holder's
// record is what it then finds): its term ends with binds in flight and
// queued, which the binder drops with their outcome unknown. When it
// leads again, the new term verifies each bind the state still holds;
// one found unbound is bound again as the last term decided, since a
// request the last term gave up on may still commit (bind.Task.Unsure).
// Every gang ends bound whole, no GPU index is given twice, and the
// scheduler goes on binding.
func TestLeaseLostMidBurst(t *testing.T) {
	e := newEnv(t, 8, 8)
	var all [][]string
	var names []string
	for g := range 14 {
		pods := e.gang(fmt.Sprintf("burst%02d", g), 4, 1, nil)
		all = append(all, pods)
		names = append(names, pods...)
	}
	cfg := testConfig()
	cfg.BindQPS, cfg.BindBurst, cfg.BindWorkers = 10, 1, 4
	cfg.LeaderElection.Enabled = true
	cfg.LeaderElection.LeaseDuration = kube.Duration{Duration: 4 * time.Second}
	cfg.LeaderElection.RenewDeadline = kube.Duration{Duration: 3 * time.Second}
	cfg.LeaderElection.RetryPeriod = kube.Duration{Duration: 500 * time.Millisecond}
	s, _ := e.runSchedulerOwnBinds(cfg, "leader")
	e.eventually(30*time.Second, "the burst begins", func() bool { return e.boundInNamespace() >= 8 })

	// Another holder's fresh record: the leader's renewals fail until the
	// record expires (4 s), and its term ends after 3 s of them.
	leases := e.cs.CoordinationV1().Leases(cfg.Namespace)
	for try := 0; ; try++ {
		l, err := leases.Get(context.Background(), cfg.LeaderElection.LeaseName, metav1GetOptions)
		if err != nil {
			t.Fatal(err)
		}
		thief, now, secs := "thief", metav1.NewMicroTime(time.Now()), int32(4)
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &thief, &now, &secs
		if _, err = leases.Update(context.Background(), l, metav1.UpdateOptions{}); err == nil {
			break
		} else if !apierrors.IsConflict(err) || try > 20 {
			t.Fatal(err)
		}
	}
	atSteal := e.boundInNamespace()
	if atSteal == len(names) {
		t.Fatalf("all %d pods were bound before the Lease was taken: the test shows nothing", len(names))
	}
	t.Logf("Lease taken with %d of %d pods bound", atSteal, len(names))
	e.eventually(20*time.Second, "the term ends", func() bool { return len(e.logged("leader", "stopped leading")) > 0 })
	e.eventually(60*time.Second, "every gang bound after the leader led again", func() bool { return e.bound(names...) })
	time.Sleep(time.Second)
	for _, g := range all {
		e.gangWhole(g)
	}
	e.checkNoDoubleGPU()
	if len(e.logged("leader", "leading")) < 2 {
		t.Errorf("the scheduler led %d times, want 2 (before and after the Lease was taken)", len(e.logged("leader", "msg=leading")))
	}
	verified := e.logged("leader", "unsettled bind verified")
	again := e.logged("leader", "unsettled bind verified", "postedAgain=true")
	t.Logf("the new term verified %d binds the last one left unsettled; %d of them were posted again", len(verified), len(again))
	e.keepsRunning(s, "after")
	e.checkNoDoubleGPU()
}
