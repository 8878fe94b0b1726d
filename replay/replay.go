// Package replay plays a trace onto a real cluster: each job becomes a
// gang of 1-GPU pods for pal-kube scheduler, kwok finishes each pod after the
// run time the simulator would charge on the GPUs it got (scaled down by
// a speedup), and the replay records the same per-job table as
// `pal sim --jobs-out` plus every job's GPUs.
//
// Each replay names its pods after a run id of its own (a second replay
// on the same cluster makes new pods), and its pods are owned by a
// ConfigMap of that name, which stands for the replay: the replay
// recreates a gang the scheduler evicted, as a Job controller would, so
// the scheduler may move them; deleting the ConfigMap deletes the pods
// (the garbage collector of kube-controller-manager).
//
// Time scaling: one simulated round of R seconds is R/speedup seconds of
// wall time, and the scheduler must run its rounds on that period aligned
// to the wall clock (config period = R/speedup, alignPeriod: true,
// arrivalDelay: 0). A job that the simulator admits at boundary T is
// created a quarter round before the matching wall-clock boundary, and a
// job that the simulator completes at boundary T finishes a quarter round
// before it, so every event falls between the same two rounds in both
// drivers; a quarter round is also the jitter the replay tolerates.
package replay

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Options is one replay.
type Options struct {
	Trace         *workload.Trace
	Round         float64 // simulated seconds per round (the simulator's --round)
	Speedup       float64 // simulated seconds per wall second
	Namespace     string
	SchedulerName string
	Timeout       time.Duration // give up after this much wall time (0: none)
	Log           func(format string, a ...any)
	// RestartCost is the simulated seconds of progress a gang loses each
	// time it is recreated after an eviction (a checkpoint restored, as
	// the simulator's --migration-cost and --preemption-cost charge it):
	// it pays them off at the start of its next placement.
	RestartCost float64
	// Slowdown, when set, is how much slower than the median GPU a job of
	// class c runs on the devices pods name (its slowest GPU, times the
	// locality penalty when they span nodes), in place of the
	// pal.io/slowdown the scheduler believes: a replay whose GPUs are not
	// what the scheduler's profile says.
	Slowdown func(c variability.Class, pods []kube.PodBind) float64

	owner []metav1.OwnerReference // the run's ConfigMap
}

// Placement is the GPUs a job ran on, by node name and device index.
type Placement struct {
	JobID int
	Pods  []kube.PodBind // sorted by node, then first index
}

// Result is a finished replay.
type Result struct {
	// Jobs are the per-job records; Nodes and GPUIDs are where each job
	// last ran in the simulator's numbering: GPU nodes in name order,
	// node n's device i is global GPU first(n)+i.
	Jobs       []metrics.JobRecord
	Placements []Placement
	Start      time.Time // wall time of simulated time 0
	// Run is the replay's run id: its pods are named RUN-NNNNN-jID-..., and
	// the ConfigMap RUN in the namespace owns them.
	Run string
	// Failed are the jobs that did not finish, by job id: a pod of theirs
	// ended Failed, or the replay could not time their placement. They
	// are not in Jobs (their times would not be the simulator's), and
	// their pods are deleted.
	Failed []JobFailure
}

// JobFailure is a job the replay gave up on, and why.
type JobFailure struct {
	JobID  int
	Reason string
}

type jobRun struct {
	spec      workload.Spec
	name      string // gang name
	pods      map[string]bool
	started   bool
	executed  float64 // iterations credited before the current placement (after preemptions)
	debt      float64 // restart cost still to pay (see Options.RestartCost)
	startTick int     // round the current placement started
	slowdown  float64
	first     float64
	placement []kube.PodBind
	done      bool
	complete  float64
	held      int // rounds held in all
	preempt   int
	succeeded map[string]bool
	gen       int // pod generation, bumped when an evicted gang is recreated
	// broken is set from a pod's deletion before its end until the gang
	// is recreated: the replay deletes the gang's other pods.
	broken bool
	failed string // why the replay gave up on the job ("": it did not)
}

// Run replays opts.Trace and returns when every job has finished.
//
// A replay that stops early (ctx ends, its timeout, an error) cannot be
// resumed: it deletes its ConfigMap, so that the garbage collector
// deletes its pods, and only its pods.
func Run(ctx context.Context, cs kubernetes.Interface, o Options) (_ *Result, err error) {
	if o.Trace == nil || len(o.Trace.Jobs) == 0 {
		return nil, fmt.Errorf("replay: empty trace")
	}
	if !(o.Round > 0) || !(o.Speedup > 0) || math.IsInf(o.Speedup, 0) {
		return nil, fmt.Errorf("replay: round and speedup must be positive")
	}
	if !(o.RestartCost >= 0) || math.IsInf(o.RestartCost, 0) {
		return nil, fmt.Errorf("replay: restart cost must be finite seconds >= 0, got %v", o.RestartCost)
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	// The informer and the goroutines that create pods end with Run.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	wr := time.Duration(o.Round / o.Speedup * float64(time.Second)) // wall round
	if wr < 200*time.Millisecond {
		return nil, fmt.Errorf("replay: a round of %v wall time is too short to replay faithfully (want >= 200ms; lower --speedup)", wr)
	}
	// Until its pods' informer has synced, the replay waits for the API
	// server startupTimeout at most, whatever its own timeout.
	sctx, scancel := context.WithTimeout(ctx, startupTimeout)
	defer scancel()
	unreachable := func(what string, err error) error {
		if sctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("replay: %s: no answer from the API server within %v (is it up and reachable?): %v", what, startupTimeout, err)
		}
		return err
	}
	// Rows the cluster can never run are refused before anything is
	// made, as pal sim refuses them.
	nodeIdx, _, size, err := gpuNodes(sctx, cs)
	if err != nil {
		return nil, unreachable("list nodes", err)
	}
	for _, j := range o.Trace.Jobs {
		if j.GPUs > size {
			return nil, fmt.Errorf("%s:%d: field \"num_gpus\": job %d asks for %d GPUs but the cluster has %d (on %d GPU nodes)", j.Source, j.Line, j.ID, j.GPUs, size, len(nodeIdx))
		}
		// The arrival's wall time must fit a time.Duration (with room
		// for the start): past it the conversion overflowed, and the job
		// arrived at once.
		if wall := math.Ceil(j.Submit/o.Round) * float64(wr); wall > math.MaxInt64/2 {
			return nil, fmt.Errorf("%s:%d: field \"submit_time\": job %d arrives at %g s, %.2g years of wall time at speedup %g: past the longest wait a replay can time (%.0f years)",
				j.Source, j.Line, j.ID, j.Submit, j.Submit/o.Speedup/(365.25*86400), o.Speedup, math.MaxInt64/2/1e9/(365.25*86400))
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(sctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, unreachable("create namespace "+o.Namespace, err)
	}
	id := make([]byte, 3)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	run := "replay-" + hex.EncodeToString(id)
	owner, err := cs.CoreV1().ConfigMaps(o.Namespace).Create(sctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: run, Namespace: o.Namespace, Labels: map[string]string{"pal.io/replay": run}},
		Data:       map[string]string{"jobs": strconv.Itoa(len(o.Trace.Jobs)), "round_s": fmtG(o.Round), "speedup": fmtG(o.Speedup)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, unreachable("create its ConfigMap "+o.Namespace+"/"+run, err)
	}
	defer func() {
		if err == nil {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		del := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
		if owner.UID != "" {
			del.Preconditions = &metav1.Preconditions{UID: &owner.UID}
		}
		if derr := cs.CoreV1().ConfigMaps(o.Namespace).Delete(dctx, owner.Name, del); derr != nil && !apierrors.IsNotFound(derr) {
			err = fmt.Errorf("%w; its pods are left (kubectl delete configmap -n %s %s deletes them): %v", err, o.Namespace, owner.Name, derr)
			return
		}
		o.Log("run %s stopped early: deleted its ConfigMap %s/%s, and with it its pods", run, o.Namespace, owner.Name)
	}()
	yes := true
	o.owner = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}}
	o.Log("run %s: pods %s-*, owned by ConfigMap %s/%s", run, run, o.Namespace, run)
	// Simulated time 0 is a wall-clock round boundary, as the scheduler's
	// aligned rounds are, one round ahead so that pods of jobs arriving at
	// time 0 are created before it.
	t0 := time.Now().Truncate(wr).Add(2 * wr)
	tick := func(w time.Time) float64 { return float64(w.Sub(t0)) / float64(wr) }

	var mu sync.Mutex
	jobs := map[string]*jobRun{}
	var order []*jobRun
	for i, s := range o.Trace.Jobs {
		j := &jobRun{spec: s, name: fmt.Sprintf("%s-%05d-j%d", run, i, s.ID), pods: map[string]bool{}, succeeded: map[string]bool{}}
		jobs[j.name] = j
		order = append(order, j)
	}
	left := len(order)
	finished := make(chan struct{})
	// failed gets the first error that ends the replay early.
	failed := make(chan error, 1)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}

	// bg counts the deletions of pods under way: Run waits for them
	// before it returns.
	var bg sync.WaitGroup
	// remove deletes the job's pods other than keep (under mu).
	remove := func(j *jobRun, keep string) {
		for name := range j.pods {
			if name == keep {
				continue
			}
			bg.Add(1)
			go func() {
				defer bg.Done()
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				err := cs.CoreV1().Pods(o.Namespace).Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
				if err != nil && !apierrors.IsNotFound(err) {
					o.Log("delete %s: %v", name, err)
				}
			}()
		}
	}
	// end counts a job out (under mu).
	end := func() {
		left--
		if left == 0 {
			close(finished)
		}
	}
	// giveUp records the job as failed, deletes its pods and goes on
	// with the others (under mu).
	giveUp := func(j *jobRun, why string) {
		j.done, j.failed = true, why
		o.Log("job %d failed: %s; its pods are deleted and the replay goes on", j.spec.ID, why)
		remove(j, "")
		end()
	}
	// succeed counts pod name of j as run to its end (under mu).
	succeed := func(j *jobRun, name string, now time.Time) {
		if j.succeeded[name] {
			return
		}
		j.succeeded[name] = true
		if len(j.succeeded) < j.spec.GPUs {
			return
		}
		j.done = true
		e := int(math.Ceil(tick(now)))
		j.complete = float64(e) * o.Round
		j.held += e - j.startTick
		o.Log("job %d finished at %.0f s (simulated)", j.spec.ID, j.complete)
		end()
	}

	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.Namespace))
	pi := f.Core().V1().Pods().Informer()
	// patch tells kwok when p finishes: the only call made for the
	// placement, so a refusal that passes is tried again, and one that
	// stays fails the replay (as in create).
	patch := func(id int, p *corev1.Pod, at time.Time) {
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, devcluster.AnnFinishAfter, at.UTC().Format(time.RFC3339Nano))
		err := retry.OnError(createBackoff, func(err error) bool { return ctx.Err() == nil && !apierrors.IsNotFound(err) }, func() error {
			_, err := cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
			if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
				o.Log("patch %s: %v", p.Name, err)
			}
			return err
		})
		if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
			fail(fmt.Errorf("replay: job %d: patch pod %s/%s: %w", id, p.Namespace, p.Name, err))
		}
	}
	onPod := func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		j := jobs[p.Annotations[kube.AnnGang]]
		if j == nil || j.done || !j.pods[p.Name] || j.broken {
			return
		}
		now := time.Now()
		if p.Status.Phase == corev1.PodFailed {
			// OOM-killed, evicted by its kubelet, ended by a kwok stage:
			// the job's times would no longer be the simulator's.
			giveUp(j, fmt.Sprintf("pod %s ended Failed (%s: %s)", p.Name, cmp.Or(p.Status.Reason, "no reason"), cmp.Or(p.Status.Message, "no message")))
			return
		}
		if p.Spec.NodeName != "" && p.Annotations[devcluster.AnnFinishAfter] == "" && p.Status.Phase != corev1.PodSucceeded {
			info, err := kube.ParseBindInfo(p.Annotations[kube.AnnBindInfo])
			if err != nil {
				giveUp(j, fmt.Sprintf("pod %s is bound to %s without a usable %s, so its round is unknown: %v", p.Name, p.Spec.NodeName, kube.AnnBindInfo, err))
				return
			}
			rs, err := time.Parse(time.RFC3339Nano, info.Round)
			if err != nil {
				giveUp(j, fmt.Sprintf("pod %s: %s round %q: %v", p.Name, kube.AnnBindInfo, info.Round, err))
				return
			}
			slow, err := strconv.ParseFloat(p.Annotations[kube.AnnSlowdown], 64)
			if err != nil || !(slow > 0) || math.IsInf(slow, 0) {
				giveUp(j, fmt.Sprintf("pod %s: no usable %s (%q)", p.Name, kube.AnnSlowdown, p.Annotations[kube.AnnSlowdown]))
				return
			}
			if o.Slowdown != nil {
				var pods []kube.PodBind
				for _, pb := range info.Pods {
					pods = append(pods, pb)
				}
				slow = o.Slowdown(j.spec.Class, pods)
			}
			k := int(math.Round(tick(rs)))
			if !j.started {
				j.started, j.startTick, j.slowdown = true, k, slow
				if j.first == 0 && j.preempt == 0 {
					j.first = float64(k) * o.Round
				}
				j.placement = nil
				for _, pb := range info.Pods {
					j.placement = append(j.placement, pb)
				}
				slices.SortFunc(j.placement, func(a, b kube.PodBind) int {
					if a.Node != b.Node {
						if a.Node < b.Node {
							return -1
						}
						return 1
					}
					return a.GPUs[0] - b.GPUs[0]
				})
			}
			n, ok := rounds(j.executed, j.debt, j.spec.Iterations, o.Round, j.slowdown*j.spec.IterTime)
			if !ok {
				giveUp(j, fmt.Sprintf("pod %s: the job needs more than %d rounds at slowdown %g: it does not finish in this replay", p.Name, maxRounds, j.slowdown))
				return
			}
			at := t0.Add(time.Duration((float64(j.startTick+n) - 0.25) * float64(wr)))
			go patch(j.spec.ID, p, at)
			return
		}
		if p.Status.Phase == corev1.PodSucceeded {
			succeed(j, p.Name, now)
		}
	}
	_, _ = pi.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { onPod(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { onPod(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			// A deletion the watch missed comes as a tombstone when the
			// informer lists again: an evicted gang all the same, which
			// nothing but the replay makes again.
			d, tomb := obj.(cache.DeletedFinalStateUnknown)
			if tomb {
				obj = d.Obj
			}
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			j := jobs[p.Annotations[kube.AnnGang]]
			if j == nil || j.done || !j.pods[p.Name] {
				return
			}
			now := time.Now()
			if !j.broken {
				// A pod deleted once it ran to its end (Succeeded, or a
				// gang mate did: they share one finish-after; or seen
				// deleted past its finish-after) is a finished member: the
				// eviction or clean-up came as the job ended. A tombstone
				// does not say when its pod went, so only its phase and
				// its gang mates count.
				at, aerr := time.Parse(time.RFC3339Nano, p.Annotations[devcluster.AnnFinishAfter])
				if p.Status.Phase == corev1.PodSucceeded || len(j.succeeded) > 0 || (!tomb && aerr == nil && !now.Before(at)) {
					succeed(j, p.Name, now)
					return
				}
			}
			// Evicted (preempted or migrated, or one pod deleted before
			// its end): like a Job controller, recreate the whole gang
			// once its last pod is gone, crediting the rounds it ran. A
			// gang short of a pod would run on (kwok ends its pods at
			// their time) as if whole: the replay deletes the others.
			delete(j.pods, p.Name)
			if len(j.pods) > 0 {
				if !j.broken {
					j.broken = true
					remove(j, "")
				}
				return
			}
			j.broken = false
			clear(j.succeeded)
			if j.started {
				// The round that evicted it started at the last boundary:
				// evictions are only made in rounds, and a round that
				// evicts many gangs may take a good part of a round to
				// make its calls, so the last pod may be seen gone well
				// past the boundary.
				k := int(math.Floor(tick(now) + 0.01))
				for r := j.startTick; r < k; r++ {
					j.executed, j.debt = credit(j.executed, j.debt, o.Round, j.slowdown*j.spec.IterTime)
				}
				j.debt += o.RestartCost
				j.held += k - j.startTick
				j.started = false
				j.preempt++
			}
			j.gen++
			go create(ctx, cs, o, j, &mu, fail)
		},
	})
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(sctx.Done(), pi.HasSynced) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("replay: the informer of the pods in namespace %s did not sync within %v: the API server does not answer its list and watch (is it up, and may this user list pods there?)", o.Namespace, startupTimeout)
	}

	// Arrivals: each job a quarter round before the boundary that admits it.
	go func() {
		for _, j := range order {
			b := math.Ceil(j.spec.Submit / o.Round)
			at := t0.Add(time.Duration((b - 0.25) * float64(wr)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			create(ctx, cs, o, j, &mu, fail)
		}
	}()
	select {
	case <-finished:
	case err := <-failed:
		return nil, err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("replay: %d of %d jobs unfinished: %v", left, len(order), ctx.Err())
	}
	bg.Wait() // the failed jobs' pods deleted
	mu.Lock()
	defer mu.Unlock()
	ectx, ecancel := context.WithTimeout(ctx, startupTimeout)
	defer ecancel()
	nodeIdx, first, _, err := gpuNodes(ectx, cs)
	if err != nil {
		return nil, err
	}
	res := &Result{Start: t0, Run: run}
	for _, j := range order {
		if j.failed != "" {
			res.Failed = append(res.Failed, JobFailure{JobID: j.spec.ID, Reason: j.failed})
			continue
		}
		jct := j.complete - j.spec.Submit
		held := float64(j.held) * o.Round
		rec := metrics.JobRecord{ID: j.spec.ID, Model: j.spec.Model, Class: j.spec.Class.String(), GPUs: j.spec.GPUs,
			Tracked: true, Origin: "trace", Arrival: j.spec.Submit, FirstStart: j.first, Completion: j.complete, JCT: jct, Run: held, GPUSeconds: held * float64(j.spec.GPUs),
			Wait: math.Max(0, jct-held), Preemptions: j.preempt}
		for _, pb := range j.placement {
			n, ok := nodeIdx[pb.Node]
			if !ok {
				continue // the node left the cluster
			}
			if !slices.Contains(rec.Nodes, n) {
				rec.Nodes = append(rec.Nodes, n)
			}
			for _, x := range pb.GPUs {
				rec.GPUIDs = append(rec.GPUIDs, first[n]+x)
			}
		}
		slices.Sort(rec.Nodes)
		slices.Sort(rec.GPUIDs)
		res.Jobs = append(res.Jobs, rec)
		res.Placements = append(res.Placements, Placement{JobID: j.spec.ID, Pods: j.placement})
	}
	slices.SortFunc(res.Jobs, func(a, b metrics.JobRecord) int { return a.ID - b.ID })
	slices.SortFunc(res.Failed, func(a, b JobFailure) int { return a.JobID - b.JobID })
	return res, nil
}

// gpuNodes numbers the cluster's GPU nodes as the scheduler and the
// simulator do: by name, node n's devices from global id first[n]; gpus
// is their sum.
func gpuNodes(ctx context.Context, cs kubernetes.Interface) (map[string]int, []int, int, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("replay: list nodes: %v", err)
	}
	var names []string
	size := map[string]int{}
	for i := range list.Items {
		n := &list.Items[i]
		if g := kube.NodeGPUs(n); g > 0 {
			names = append(names, n.Name)
			size[n.Name] = g
		}
	}
	slices.Sort(names)
	idx := map[string]int{}
	var first []int
	id := 0
	for i, n := range names {
		idx[n] = i
		first = append(first, id)
		id += size[n]
	}
	return idx, first, id, nil
}

func fmtG(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// maxRounds bounds the rounds counted for one job: 4 million rounds
// are over 9 days of wall time at the shortest round the replay takes.
// An absurd slowdown (1e300 from a pod's annotation) would otherwise be
// counted round by round, under the replay's lock, for ever.
const maxRounds = 1 << 22

// rounds is how many rounds the simulator runs a job from executed
// iterations (with debt seconds of restart cost to pay first) to its
// total, crediting round by round exactly as the simulator does; ok is
// false past maxRounds.
func rounds(executed, debt, total, R, perIter float64) (n int, ok bool) {
	for executed < total {
		if n == maxRounds {
			return n, false
		}
		executed, debt = credit(executed, debt, R, perIter)
		n++
	}
	return n, true
}

// credit is one round of progress as the simulator credits it: a debt
// is paid first (up to the whole round), the rest of the round runs at
// R/perIter iterations a round.
func credit(executed, debt, R, perIter float64) (float64, float64) {
	if debt > 0 {
		d := math.Min(debt, R)
		return executed + (R-d)/perIter, debt - d
	}
	return executed + R/perIter, debt
}

// create makes a job's gang: one 1-GPU pod per GPU, so that any GPU set
// the placer picks splits into pods.
func create(ctx context.Context, cs kubernetes.Interface, o Options, j *jobRun, mu *sync.Mutex, fail func(error)) {
	mu.Lock()
	gen := j.gen
	mu.Unlock()
	for i := range j.spec.GPUs {
		name := fmt.Sprintf("%s-%d", j.name, i)
		if gen > 0 {
			name = fmt.Sprintf("%s-g%d-%d", j.name, gen, i)
		}
		ann := map[string]string{
			kube.AnnGang: j.name, kube.AnnGangSize: strconv.Itoa(j.spec.GPUs),
			kube.AnnClass: j.spec.Class.String(), kube.AnnIterations: strconv.FormatFloat(j.spec.Iterations, 'g', -1, 64),
		}
		if j.spec.Model != "" {
			ann[kube.AnnModel] = j.spec.Model
		}
		if j.spec.App != "" {
			ann[kube.AnnApp] = j.spec.App // the trace's app column, for scheduler themis
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Annotations: ann, OwnerReferences: o.owner,
				Labels: map[string]string{"pal.io/replay": o.owner[0].Name}},
			Spec: corev1.PodSpec{SchedulerName: o.SchedulerName, RestartPolicy: corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{Name: "train", Image: "replay",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}},
		}
		mu.Lock()
		if j.done || j.gen != gen {
			// Given up on (or broken and recreated again) meanwhile.
			mu.Unlock()
			return
		}
		j.pods[name] = true
		mu.Unlock()
		// A gang short of a pod is never placed: a refusal that passes
		// (a 500, a timeout) is tried again, one that stays fails the
		// replay. AlreadyExists after a try is that try's pod, whose
		// answer was lost.
		tries := 0
		err := retry.OnError(createBackoff, func(err error) bool { return ctx.Err() == nil && !apierrors.IsAlreadyExists(err) }, func() error {
			tries++
			_, err := cs.CoreV1().Pods(o.Namespace).Create(ctx, p, metav1.CreateOptions{})
			if err != nil && ctx.Err() == nil {
				o.Log("create %s: %v", name, err)
			}
			return err
		})
		if err != nil && !(apierrors.IsAlreadyExists(err) && tries > 1) {
			if ctx.Err() == nil {
				fail(fmt.Errorf("replay: job %d: create pod %s/%s: %w", j.spec.ID, o.Namespace, name, err))
			}
			return
		}
	}
}

// startupTimeout bounds the replay's wait for the API server before its
// informer has synced (and for its last list of nodes), even with no
// Options.Timeout: a server that does not answer is a clear error, not a
// hang.
var startupTimeout = 2 * time.Minute

// createBackoff spaces the tries of a refused pod create or patch: 5
// tries in about 1.5 s.
var createBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 5}
