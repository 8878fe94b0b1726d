//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

var metav1GetOptions = metav1.GetOptions{}

// kill -9 between two binds of a gang, then restart: the gang ends fully
// bound exactly as its bind-info recorded, and nothing is bound twice.
func TestKillBetweenBindsThenRestart(t *testing.T) {
	e := newEnv(t, 2, 4)
	cfgFile := filepath.Join(t.TempDir(), "pal.yaml")
	// One bind at a time, so that the crash lands between two binds.
	if err := os.WriteFile(cfgFile, []byte("period: 300ms\narrivalDelay: 50ms\nbindWorkers: 1\nmetricsAddr: \"\"\nleaderElection: {enabled: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := e.gang("crash", 4, 2, nil)
	cmd := exec.Command(kubeBin, "scheduler", "--config", cfgFile, "--kubeconfig", e.cl.Kubeconfig, "--log-json")
	cmd.Env = append(os.Environ(), kube.KillAfterBindsEnv+"=2")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("scheduler did not die by SIGKILL (%v); output:\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("scheduler never reached its second bind; output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `"msg":"test hook: killing myself after bind"`) {
		t.Errorf("no JSON log line of the kill; output:\n%s", out.String())
	}
	if n := e.countBound(names...); n != 2 {
		t.Fatalf("%d of 4 members bound at the crash, want exactly 2", n)
	}
	var rec *kube.BindInfo
	for _, n := range names {
		if p := e.pod(n); p.Spec.NodeName != "" {
			bi, err := kube.ParseBindInfo(p.Annotations[kube.AnnBindInfo])
			if err != nil {
				t.Fatal(err)
			}
			rec = bi
		}
	}
	// Restart (in-process, to count its binds).
	s, _ := e.runScheduler(testConfig(), "restarted")
	e.eventually(15*time.Second, "gang completed", func() bool { return e.bound(names...) })
	for _, n := range names {
		p := e.pod(n)
		want := rec.Pods[n]
		if p.Spec.NodeName != want.Node || p.Annotations[kube.AnnGPUIndices] != kube.FormatIndices(want.GPUs) {
			t.Errorf("%s bound to %s GPUs %s, bind-info recorded %+v", n, p.Spec.NodeName, p.Annotations[kube.AnnGPUIndices], want)
		}
	}
	time.Sleep(time.Second)
	if got := s.Binds(); got != 2 {
		t.Errorf("restarted scheduler made %d binds, want exactly the 2 missing", got)
	}
	e.checkNoDoubleGPU()
}

// Two replicas with leader election: only the leader binds; when it stops
// (SIGTERM-like cancel releases the Lease) the other takes over.
func TestLeaderElectionOnlyLeaderBinds(t *testing.T) {
	e := newEnv(t, 2, 4)
	cfg := testConfig()
	cfg.LeaderElection.Enabled = true
	cfg.LeaderElection.LeaseDuration = kube.Duration{Duration: 4 * time.Second}
	cfg.LeaderElection.RenewDeadline = kube.Duration{Duration: 3 * time.Second}
	cfg.LeaderElection.RetryPeriod = kube.Duration{Duration: 500 * time.Millisecond}
	a, stopA := e.runScheduler(cfg, "replica-a")
	time.Sleep(2 * time.Second) // a takes the Lease first
	b, stopB := e.runScheduler(cfg, "replica-b")
	for i := range 4 {
		e.createPod(podOpts{name: "first-" + string(rune('a'+i)), gpus: 1})
	}
	e.eventually(15*time.Second, "first pods bound", func() bool { return e.bound("first-a", "first-b", "first-c", "first-d") })
	if a.Binds() != 4 || b.Binds() != 0 {
		t.Fatalf("binds: replica-a %d, replica-b %d; want 4 and 0", a.Binds(), b.Binds())
	}
	lease, err := e.cs.CoordinationV1().Leases("pal-system").Get(context.Background(), "pal-scheduler", metav1GetOptions)
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("no Lease holder: %v", err)
	}
	stopA()
	for i := range 2 {
		e.createPod(podOpts{name: "second-" + string(rune('a'+i)), gpus: 1})
	}
	e.eventually(20*time.Second, "second pods bound by the new leader", func() bool { return e.bound("second-a", "second-b") })
	if a.Binds() != 4 || b.Binds() != 2 {
		t.Fatalf("binds after failover: replica-a %d, replica-b %d; want 4 and 2", a.Binds(), b.Binds())
	}
	stopB()
	e.checkNoDoubleGPU()
}
