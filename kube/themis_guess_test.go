package kube

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// A gang whose pods do not say their work is counted on a guess
// (knownWork): without pal.io/iterations one iteration, without
// pal.io/model one second an iteration. Its app's ρ rests on it, and one
// WorkGuessed event on the gang's first pod (and one log line) says so,
// however many rounds place it: gang g (no pal.io/iterations, BERT) and
// gang h (neither) bind at 0 on one 4-GPU node, and rounds at 60 and 120
// post nothing more. Gang k says both and gets no event.
func TestThemisSaysWorkIsGuessed(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	g0 := themisPod("g-0", 1, "G", "g", 1, "1000", t0)
	delete(g0.Annotations, AnnIterations)
	h0 := themisPod("h-0", 1, "H", "h", 1, "1000", t0)
	delete(h0.Annotations, AnnIterations)
	delete(h0.Annotations, AnnModel)
	k0 := themisPod("k-0", 1, "K", "k", 1, "1000", t0)
	cs, _ := newFake(t, node("n0", 4), g0, h0, k0)
	var mu sync.Mutex
	var got []string
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ev, ok := a.(k8stesting.CreateAction).GetObject().(*eventsv1.Event); ok && ev.Reason == ReasonWorkGuessed {
			mu.Lock()
			got = append(got, ev.Regarding.Name+" "+ev.Type+" "+ev.Reason+": "+ev.Note)
			mu.Unlock()
		}
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	s := startRounds(t, themisCfg(), cs)
	ctx := context.Background()
	s.events.Start(ctx)
	at := clockAt(t0)
	for _, sec := range []int{0, 60, 120} {
		roundWait(s, ctx, at(sec))
	}
	s.events.Stop()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got)
	want := []string{
		"g-0 Warning WorkGuessed: no pal.io/iterations: Themis counts it as one iteration; the work of app ns/G, and so its rho, rests on that guess",
		"h-0 Warning WorkGuessed: no pal.io/iterations: Themis counts it as one iteration, no pal.io/model: each iteration counts as one second; the work of app ns/H, and so its rho, rests on that guess",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("WorkGuessed events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
