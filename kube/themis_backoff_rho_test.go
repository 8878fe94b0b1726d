package kube

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rhoSeries is every pal_app_rho series as app=value, sorted.
func rhoSeries(t *testing.T, s *Scheduler) string {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	s.metrics.AppRho.Collect(ch)
	close(ch)
	var out []string
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		v := d.GetGauge().GetValue()
		val := fmt.Sprintf("%.3g", v)
		if math.IsInf(v, 1) {
			val = "+Inf"
		}
		out = append(out, d.GetLabel()[0].GetValue()+"="+val)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// An app whose gang is gone for a while (its Job's pod failed and the
// controller waits out its backoff before making another) has not left:
// pal_app_rho keeps its series at the ρ of the last auction it was in
// until the scheduler forgets the gang (standInKeep and three periods
// after it was last seen). One 4-GPU node; gangs a (app A) and b (app B),
// one 2-GPU pod each, bind at 0, both at ρ +Inf (they held nothing). a-0
// is deleted at 90; the auction at 120 (a's finish) has B alone, and A's
// series stays at +Inf; it is gone once a is forgotten (the round at
// 660: last seen at 60, 60 + 360 + 180 < 660).
func TestThemisRhoKeptThroughBackoff(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cs, fc := newFake(t, node("n0", 4),
		themisPod("a-0", 2, "A", "a", 1, "1000000", t0), themisPod("b-0", 2, "B", "b", 1, "1000000", t0))
	cfg := themisCfg()
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	if fc.binds["a-0"] == nil || fc.binds["b-0"] == nil {
		t.Fatalf("t=0: a-0 bound %v, b-0 bound %v; want both", fc.binds["a-0"] != nil, fc.binds["b-0"] != nil)
	}
	settleBound(t, s, cs, fc, "a-0", "b-0")
	if got, want := rhoSeries(t, s), "ns/A=+Inf ns/B=+Inf"; got != want {
		t.Fatalf("t=0: pal_app_rho %s, want %s", got, want)
	}
	roundWait(s, ctx, at(60))
	if err := cs.CoreV1().Pods("ns").Delete(ctx, "a-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "a-0", false)
	if standInKeep+3*cfg.Period.Duration != 540*time.Second {
		t.Fatalf("standInKeep %v and period %v: the case assumes 540 s", standInKeep, cfg.Period.Duration)
	}
	for sec := 120; sec <= 660; sec += 60 {
		roundWait(s, ctx, at(sec))
		want := "ns/A=+Inf ns/B=1"
		if sec == 660 {
			want = "ns/B=1"
		}
		if got := rhoSeries(t, s); got != want {
			t.Fatalf("t=%d: pal_app_rho %s, want %s", sec, got, want)
		}
	}
}
