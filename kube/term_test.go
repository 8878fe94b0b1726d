package kube

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// A term that ends drops its binder's tasks without a Result: those
// handed over after it ended, and those still being tried (here the
// apiserver answers every Binding with a server error, so the binds are
// retried until the term ends). Nothing counts them down, and the next
// term verifies the binds again. Across the change the in-flight gauge
// must come back to zero once the next term's verifications settle, and
// the gang's bind bookkeeping must not keep the dropped binds. The
// verifications find g's pods unbound and, since a request of the last
// term may still commit, bind them again (bind.Task.Unsure): the new
// term's round then has nothing to bind, and nothing is left in flight.
func TestNewTermResetsBindCounts(t *testing.T) {
	for _, retrying := range []bool{false, true} {
		name := "submitted after the term ended"
		if retrying {
			name = "retried when the term ended"
		}
		t.Run(name, func(t *testing.T) {
			cs, fc := newFake(t, node("n0", 4), owned(pod("g-0", 2, gangAnn("g", 2), "")), owned(pod("g-1", 2, gangAnn("g", 2), "")))
			var failing atomic.Bool
			var tries atomic.Int32
			failing.Store(retrying)
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "binding" || !failing.Load() {
					return false, nil, nil
				}
				tries.Add(1)
				return true, nil, apierrors.NewInternalError(errors.New("etcd timeout"))
			})
			logs := &syncBuf{}
			s, err := New(testCfg(), cs, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			s.binder.Backoff, s.binder.MaxBackoff = time.Millisecond, 5*time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s.startFactories(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
				t.Fatal("informers did not sync")
			}
			inFlight := func() float64 { return testutil.ToFloat64(s.metrics.BindsInFlight) }

			term1, end1 := context.WithCancel(ctx)
			defer end1()
			s.binder.Start(term1)
			if !retrying {
				end1() // the lease is lost before the round hands its binds over
			}
			s.Round(term1, time.Now())
			if retrying {
				for deadline := time.Now().Add(10 * time.Second); tries.Load() < 4; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%d Bindings tried, want the binds retrying", tries.Load())
					}
				}
				end1()
			}
			failing.Store(false)

			term2, end2 := context.WithCancel(ctx)
			defer end2()
			s.binder.Start(term2)
			s.verifyUnsettled()
			if err := s.binder.Wait(term2); err != nil {
				t.Fatal(err)
			}
			if got := inFlight(); got != 0 {
				t.Errorf("pal_binds_in_flight %v once the new term verified the unsettled binds, want 0", got)
			}
			if len(fc.binds) != 2 {
				t.Fatalf("binds %v after the verifications, want g-0 and g-1 bound again", keys(fc.binds))
			}
			for _, p := range []string{"g-0", "g-1"} {
				if !strings.Contains(logs.String(), `msg="unsettled bind verified" pod=ns/`+p+` bound=true postedAgain=true`) {
					t.Errorf("no line saying %s was bound again:\n%s", p, logs)
				}
			}
			roundWait(s, term2, time.Now()) // g runs: nothing to bind
			if len(fc.binds) != 2 {
				t.Fatalf("binds %v after the new term's round, want g-0 and g-1 once each", keys(fc.binds))
			}
			if got := inFlight(); got != 0 {
				t.Errorf("pal_binds_in_flight %v after the new term's round, want 0", got)
			}
			s.binding.mu.Lock()
			defer s.binding.mu.Unlock()
			if len(s.binding.gangs) != 0 {
				t.Errorf("%d gangs' binds still followed, want none", len(s.binding.gangs))
			}
		})
	}
}

// armedPlacer places as its funcPlacer does; its Name panics once, the
// first time it is asked while armed holds.
type armedPlacer struct {
	funcPlacer
	armed func() bool
	fired *bool
}

func (p armedPlacer) Name() string {
	if !*p.fired && p.armed() {
		*p.fired = true
		panic("injected: placer name")
	}
	return "armed"
}

// act assumes each eviction in the state as it decides it and hands the
// tasks to the binder at its end. A panic in between (here the placer's
// Name, asked for the second preempted gang's reason once the first
// gang's eviction is assumed) must not leave that eviction assumed and
// never posted: its gang would count as leaving, out of every plan, for
// as long as its pod ran. Gangs a (n0 0,1) and b (n0 2,3) run; the placer
// preempts both for gang q (4 GPUs). The round fails, and the eviction
// it assumed is posted and settled all the same.
func TestActSubmitsAssumedOnPanic(t *testing.T) {
	cs, fc := newFake(t, node("n0", 4),
		running(owned(pod("a-0", 2, gangAnn("a", 1, AnnGPUIndices, "0,1"), "n0"))),
		running(owned(pod("b-0", 2, gangAnn("b", 1, AnnGPUIndices, "2,3"), "n0"))),
		owned(pod("q-0", 4, gangAnn("q", 1), "")))
	s := startRounds(t, testCfg(), cs)
	fired := false
	s.pol.place = armedPlacer{
		funcPlacer: funcPlacer{new(int), func(_ int, _ *policy.Env, order []*workload.Job) [][]int {
			out := make([][]int, len(order))
			var held []int
			for _, j := range order {
				held = append(held, j.GPUsHeld...)
			}
			for i, j := range order {
				if j.GPUsHeld == nil {
					out[i] = held
				}
			}
			return out
		}},
		armed: func() bool { all, _ := s.state.Assumed(); return all > 0 },
		fired: &fired,
	}
	roundWait(s, context.Background(), time.Now())
	if !fired {
		t.Fatalf("the placer's Name was not asked once an eviction was assumed (evicted %v)", fc.evicted)
	}
	if n := testutil.ToFloat64(s.metrics.RoundErrors.WithLabelValues("round")); n != 1 {
		t.Errorf("pal_round_errors_total{stage=round} %v, want 1", n)
	}
	s.state.Sync() // takes the binder's settlements in
	all, confirmed := s.state.Assumed()
	if len(fc.evicted) != 1 || all != 1 || confirmed != 1 {
		t.Errorf("evicted %v, %d assumptions of which %d settled; want one eviction, posted and settled", fc.evicted, all, confirmed)
	}
}
