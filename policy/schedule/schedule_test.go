package schedule

import (
	"math"
	"slices"
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

func mk(id int, submit, attained, iters, iterTime float64, prio int) *workload.Job {
	j := workload.NewJob(workload.Spec{ID: id, GPUs: 1, Submit: submit, Iterations: iters, IterTime: iterTime})
	j.Attained = attained
	j.Priority = prio
	return j
}

func ids(js []*workload.Job) []int {
	var out []int
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

func TestOrders(t *testing.T) {
	jobs := func() []*workload.Job {
		return []*workload.Job{
			mk(0, 10, 720, 1000, 1, 999), // remaining 280
			mk(1, 5, 0, 5000, 1, 999),    // remaining 5000
			mk(2, 20, 360, 400, 1, 999),  // remaining 40
			mk(3, 30, 0, 100, 1, 1),      // starved: priority 1
			mk(4, 5, 0, 10000, 0.5, 999), // same submit as 1: keeps input order
		}
	}
	cases := []struct {
		s interface {
			Order(float64, []*workload.Job) []*workload.Job
		}
		want []int
	}{
		{FIFO{}, []int{3, 1, 4, 0, 2}},
		{LAS{}, []int{3, 1, 4, 2, 0}},
		{SRTF{}, []int{3, 2, 0, 1, 4}},
	}
	for _, tc := range cases {
		got := ids(tc.s.Order(0, jobs()))
		if len(got) != len(tc.want) {
			t.Fatalf("%T: %v", tc.s, got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%T: got %v, want %v", tc.s, got, tc.want)
			}
		}
	}
}

func TestTiresiasDemotesByGPUService(t *testing.T) {
	s := NewTiresiasLAS(TiresiasConfig{Thresholds: []float64{1000, 5000}, TwoD: true})
	a := mk(0, 0, 0, 1, 1, 999)
	b := mk(1, 10, 0, 1, 1, 999)
	c := mk(2, 20, 0, 1, 1, 999)
	a.GPUService = 1200 // crosses 1000: queue 1
	b.GPUService = 6000 // crosses both: queue 2
	c.GPUService = 10   // queue 0
	got := ids(s.Order(0, []*workload.Job{a, b, c}))
	if want := []int{2, 0, 1}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("got %v want %v", got, want)
	}
	if s.Queue(1) != 2 || s.Queue(0) != 1 || s.Queue(2) != 0 {
		t.Fatalf("queues %d %d %d", s.Queue(0), s.Queue(1), s.Queue(2))
	}
}

func TestTiresiasStarvationPromotes(t *testing.T) {
	s := NewTiresiasLAS(TiresiasConfig{Thresholds: []float64{100}, TwoD: true, StarvationFactor: 2})
	a := mk(0, 0, 0, 1, 1, 999)
	a.GPUService = 150
	a.GPUsHeld = []int{0} // running: records the run length
	s.Order(0, []*workload.Job{a})
	if s.Queue(0) != 1 {
		t.Fatalf("want queue 1, got %d", s.Queue(0))
	}
	a.GPUsHeld = nil
	a.SinceScheduled = 299 // < 2 x 150
	s.Order(0, []*workload.Job{a})
	if s.Queue(0) != 1 {
		t.Fatal("promoted too early")
	}
	a.SinceScheduled = 300
	s.Order(0, []*workload.Job{a})
	if s.Queue(0) != 0 {
		t.Fatal("not promoted after waiting S x last service")
	}
}

func TestNew(t *testing.T) {
	for _, n := range Names() {
		if _, err := New(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New("edf"); err == nil {
		t.Fatal("want error for unknown scheduler")
	}
	if err := (TiresiasConfig{Thresholds: []float64{10, 5}}).Validate(); err == nil {
		t.Fatal("decreasing thresholds accepted")
	}
}

// PeekKey must give Key's answer without moving a job between queues:
// the simulator looks ahead with it.
func TestTiresiasPeekKeyChangesNothing(t *testing.T) {
	s := NewTiresiasLAS(TiresiasConfig{Thresholds: []float64{100}, TwoD: true, StarvationFactor: 2})
	a := mk(0, 7, 0, 1, 1, 999)
	a.GPUService = 150
	a.GPUsHeld = []int{0}
	peek := s.PeekKey(0, a)
	if s.Queue(0) != 0 {
		t.Fatal("PeekKey demoted the job")
	}
	if got := s.Key(0, a); got != peek || got.Level != 1 || got.Value != 7 {
		t.Fatalf("Key %+v, PeekKey %+v, want level 1 at submit 7", got, peek)
	}
	if w := s.WakeAfter(a); w != 300 {
		t.Fatalf("WakeAfter %v, want 2 x 150", w)
	}
	a.GPUsHeld = nil
	a.SinceScheduled = 300
	if s.PeekKey(0, a).Level != 0 || s.Queue(0) != 1 {
		t.Fatal("PeekKey should see the promotion without applying it")
	}
}

// One queue where FIFO, LAS, SRTF and Tiresias (default 2D-LAS: queue 0
// below 3250 GPU-s, queue 1 below 7200) each give a different order, by
// hand:
//
//	job  submit  GPUs  attained  GPU-s  total  remaining  Tiresias queue
//	A       0     1     4000     4000   10000     6000        1
//	B      10     4     1000     4000    2000     1000        1
//	C      20     1     3000     3000  100000    97000        0
//	D      30     8        0        0   50000    50000        0
//
//	FIFO (submit):            A B C D
//	LAS (attained):           D B C A
//	SRTF (remaining):         B A D C
//	Tiresias (queue, submit): C D A B
func TestOrdersAllDiffer(t *testing.T) {
	jobs := func() []*workload.Job {
		mkj := func(id int, submit float64, gpus int, attained, total float64) *workload.Job {
			j := workload.NewJob(workload.Spec{ID: id, GPUs: gpus, Submit: submit, Iterations: total, IterTime: 1})
			j.Attained, j.GPUService = attained, attained*float64(gpus)
			return j
		}
		return []*workload.Job{mkj(0, 0, 1, 4000, 10000), mkj(1, 10, 4, 1000, 2000), mkj(2, 20, 1, 3000, 100000), mkj(3, 30, 8, 0, 50000)}
	}
	cases := []struct {
		name string
		s    interface {
			Order(float64, []*workload.Job) []*workload.Job
		}
		want []int
	}{
		{"fifo", FIFO{}, []int{0, 1, 2, 3}},
		{"las", LAS{}, []int{3, 1, 2, 0}},
		{"srtf", SRTF{}, []int{1, 0, 3, 2}},
		{"tiresias", NewTiresiasLAS(DefaultTiresias()), []int{2, 3, 0, 1}},
	}
	for _, tc := range cases {
		got := ids(tc.s.Order(0, jobs()))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A job's queue history is kept per id whichever table holds it: a small
// id (the dense table), one past the table's bound and a negative one
// (the map) go through the same demotion, starvation promotion and
// Forget, and Forget leaves no state behind for the id's next job.
func TestTiresiasStateByIDRange(t *testing.T) {
	for _, id := range []int{3, denseIDs, denseIDs + 9, -4} {
		s := NewTiresiasLAS(TiresiasConfig{Thresholds: []float64{100, 400}, TwoD: true, StarvationFactor: 2})
		other := mk(0, 1, 0, 1, 1, 999) // a neighbour whose state must not leak
		other.GPUService = 500
		s.Key(0, other)
		a := mk(id, 5, 0, 1, 1, 999)
		a.GPUService = 150
		a.GPUsHeld = []int{0}
		if k := s.Key(0, a); k.Level != 1 || k.Value != 5 || s.Queue(id) != 1 {
			t.Fatalf("id %d: key %+v queue %d, want level 1", id, k, s.Queue(id))
		}
		if w := s.WakeAfter(a); w != 300 {
			t.Fatalf("id %d: WakeAfter %v, want 2 x 150", id, w)
		}
		a.GPUsHeld = nil
		a.SinceScheduled = 300
		if k := s.Key(0, a); k.Level != 0 || s.Queue(id) != 0 {
			t.Fatalf("id %d: not promoted: %+v", id, k)
		}
		a.GPUService = 200 // 50 since the promotion: stays in queue 0
		a.GPUsHeld = []int{1}
		if k := s.Key(0, a); k.Level != 0 {
			t.Fatalf("id %d: demoted on service before the promotion: %+v", id, k)
		}
		s.Forget(id)
		if s.Queue(id) != 0 || !math.IsInf(s.WakeAfter(a), 1) {
			t.Fatalf("id %d: state left after Forget: queue %d, wake %v", id, s.Queue(id), s.WakeAfter(a))
		}
		b := mk(id, 9, 0, 1, 1, 999) // the id's next job starts afresh
		b.GPUService = 450           // past both thresholds when counted from 0
		if k := s.Key(0, b); k.Level != 2 || s.Queue(0) != 2 {
			t.Fatalf("id %d: next job %+v, neighbour queue %d (want 2 and 2)", id, k, s.Queue(0))
		}
	}
}

// SRTF ranks by what is left, not by the job's whole length: a (1,000 s
// of work, 900 attained, 100 left) goes before b (400 s, none attained).
func TestSRTFRanksWhatIsLeft(t *testing.T) {
	a, b := mk(0, 0, 900, 1000, 1, 999), mk(1, 0, 0, 400, 1, 999)
	if got := ids(SRTF{}.Order(0, []*workload.Job{b, a})); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("got %v, want [0 1]", got)
	}
}

// Ties keep the given order (Blox sorts stably): 40 jobs under FIFO, LAS
// and SRTF, given in a shuffled id order, whose keys cycle through three
// values (the i-th given job's submit time and attained service are
// i mod 3, its remaining time 100 - i mod 3 under SRTF, which reverses
// the groups) come back group by group, each group in the given order.
// The standard library's unstable sort keeps short or already sorted
// inputs in order too, so only a long unsorted one tells them apart.
func TestOrdersKeepTiesInGivenOrder(t *testing.T) {
	perm := []int{17, 3, 29, 0, 38, 11, 24, 6, 33, 19, 1, 27, 14, 36, 8, 22, 31, 4, 12, 39,
		25, 9, 2, 34, 16, 21, 37, 5, 28, 13, 30, 7, 18, 35, 10, 26, 23, 15, 32, 20}
	group := func(order []int) []int {
		var out []int
		for _, r := range order {
			for i, id := range perm {
				if i%3 == r {
					out = append(out, id)
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		s interface {
			Order(float64, []*workload.Job) []*workload.Job
		}
		want []int
	}{{FIFO{}, group([]int{0, 1, 2})}, {LAS{}, group([]int{0, 1, 2})}, {SRTF{}, group([]int{2, 1, 0})}} {
		var jobs []*workload.Job
		for i, id := range perm {
			k := float64(i % 3)
			jobs = append(jobs, mk(id, k, k, 100, 1, 999))
		}
		if got := ids(tc.s.Order(0, jobs)); !slices.Equal(got, tc.want) {
			t.Errorf("%T: got %v, want %v", tc.s, got, tc.want)
		}
	}
}

// A job demotes once its service reaches a threshold, not only past it
// (Tiresias: service >= threshold), and thresholds must strictly
// increase: two equal ones would make a queue no job can stay in.
func TestTiresiasThresholdEdges(t *testing.T) {
	s := NewTiresiasLAS(TiresiasConfig{Thresholds: []float64{1000}, TwoD: true})
	a := mk(0, 0, 0, 1, 1, 999)
	a.GPUService = 1000
	s.Order(0, []*workload.Job{a})
	if s.Queue(0) != 1 {
		t.Errorf("service at the threshold: queue %d, want 1", s.Queue(0))
	}
	if err := (TiresiasConfig{Thresholds: []float64{100, 100}}).Validate(); err == nil {
		t.Error("equal thresholds accepted")
	}
}

// TestSteadyNeverWakes: FIFO, LAS and SRTF say they are steady
// (policy.Steady), and WakeAfter is +Inf for any job, as a driver that
// stops asking relies on; Tiresias-LAS, whose starvation promotion
// wakes waiting jobs, does not say so.
func TestSteadyNeverWakes(t *testing.T) {
	jobs := []*workload.Job{
		{Priority: workload.DefaultPriority},
		{Priority: 1, Attained: 5000, SinceScheduled: 1e9},
		{Priority: workload.DefaultPriority, Attained: 1e6, SinceScheduled: 300, Spec: workload.Spec{GPUs: 4, Iterations: 1e5, IterTime: 0.5}},
	}
	for _, s := range []policy.KeyedScheduler{FIFO{}, LAS{}, SRTF{}} {
		if st, ok := s.(policy.Steady); !ok || !st.Steady() {
			t.Errorf("%s: not steady", s.Name())
		}
		for i, j := range jobs {
			if w := s.WakeAfter(j); !math.IsInf(w, 1) {
				t.Errorf("%s: job %d wakes after %v", s.Name(), i, w)
			}
		}
	}
	if _, ok := policy.KeyedScheduler(NewTiresiasLAS(DefaultTiresias())).(policy.Steady); ok {
		t.Error("tiresias-las says it is steady")
	}
}

// TestFixedKeys: FIFO says its keys are fixed (policy.Fixed), and its key
// for a job is the same whatever the time and the job's service, as a
// driver that keys a running job only once relies on; LAS, SRTF and
// Tiresias-LAS, whose keys follow the service, do not say so.
func TestFixedKeys(t *testing.T) {
	var s policy.KeyedScheduler = FIFO{}
	if f, ok := s.(policy.Fixed); !ok || !f.Fixed() {
		t.Fatal("fifo: not fixed")
	}
	j := &workload.Job{Priority: workload.DefaultPriority, Spec: workload.Spec{Submit: 42, GPUs: 2, Iterations: 1e5, IterTime: 0.5}}
	want := s.Key(0, j)
	for _, now := range []float64{300, 6e5} {
		j.Attained += 300
		j.GPUService += 600
		j.Executed += 100
		j.RoundsRun++
		j.SinceScheduled = now
		if k := s.Key(now, j); k.Compare(want) != 0 || k != want {
			t.Errorf("fifo key at %v: %+v, want %+v", now, k, want)
		}
	}
	for _, s := range []policy.KeyedScheduler{LAS{}, SRTF{}, NewTiresiasLAS(DefaultTiresias())} {
		if f, ok := s.(policy.Fixed); ok && f.Fixed() {
			t.Errorf("%s says its keys are fixed", s.Name())
		}
	}
}

// TestByAttainedKeys: LAS says its key is the priority and the attained
// service (policy.ByAttained), and it is, whatever the time and the rest
// of the job's state, as a driver that packs the service itself relies
// on; FIFO, SRTF and Tiresias-LAS do not say so.
func TestByAttainedKeys(t *testing.T) {
	var s policy.KeyedScheduler = LAS{}
	if a, ok := s.(policy.ByAttained); !ok || !a.ByAttained() {
		t.Fatal("las: not keyed by attained service")
	}
	j := &workload.Job{Priority: workload.DefaultPriority, Spec: workload.Spec{Submit: 42, GPUs: 2, Iterations: 1e5, IterTime: 0.5}}
	for _, now := range []float64{0, 300, 6e5} {
		for _, p := range []int{workload.DefaultPriority, 1} {
			j.Priority = p
			want := policy.OrderKey{Priority: j.Priority, Value: j.Attained}
			if k := s.Key(now, j); k != want {
				t.Errorf("las key at %v: %+v, want %+v", now, k, want)
			}
		}
		j.Attained += 300
		j.GPUService += 600
		j.Executed += 100
		j.RoundsRun++
		j.SinceScheduled = now
	}
	for _, s := range []policy.KeyedScheduler{FIFO{}, SRTF{}, NewTiresiasLAS(DefaultTiresias())} {
		if a, ok := s.(policy.ByAttained); ok && a.ByAttained() {
			t.Errorf("%s says it is keyed by attained service", s.Name())
		}
	}
}
