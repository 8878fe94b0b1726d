package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// A scheduler that starts while the cells ConfigMap is refused or gone
// takes the running gangs in under the cells last in force from it (its
// copy, AppliedCellsConfigMap), not the cells file's. Nodes n0-n3 of 4
// GPUs; the file gives VC A n0 and n1 and B n2 and n3, the ConfigMap then
// A n1 alone (n0 out of the cells). Gangs a (A, n0+n1) and b (B, n2+n3)
// run, and a2 (A) waits: A's one cell is a's. The operator then breaks the
// ConfigMap (or deletes it) and the scheduler restarts: under the file's
// cells a would be A's whole again (A two cells, a2 reading "0 of their 8
// GPUs free"); with the copy the cells and a2's reason are those before
// the restart.
func TestCellsLastInForceSurviveBadConfigMap(t *testing.T) {
	const ab = "ns/a-0@n0[0,1,2,3] ns/a-1@n1[0,1,2,3] ns/b-0@n2[0,1,2,3] ns/b-1@n3[0,1,2,3]"
	const cells = "a:n1/0,1,2,3 b:n2/0,1,2,3+n3/0,1,2,3"
	const why = "VC A's cells cannot hold it: 0 of their 4 GPUs free"
	for _, c := range []struct {
		name  string
		after string // the ConfigMap's text at the restart; "" gone
		say   string
	}{
		{"refused", "physicalCluster: [", "cells ConfigMap ns/pal-cells refused: the cells last in force from it"},
		{"gone", "", "cells ConfigMap ns/pal-cells not found: the cells last in force from it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, at := hivedWorld(t, cellsFile(t, shrinkCells), 4, withCellsConfigMap, func(c *Config) { c.Namespace = "ns" })
			for _, g := range []struct{ name, vc, want string }{
				{"a", "A", "ns/a-0@n0[0,1,2,3] ns/a-1@n1[0,1,2,3]"},
				{"b", "B", ab},
			} {
				for _, p := range []string{g.name + "-0", g.name + "-1"} {
					w.create(p, 4, gangAnn(g.name, 2, AnnVC, g.vc), *at)
				}
				w.expect(at, g.name, g.want)
			}
			w.setCells(w.s.cfg, shrinkAfter)
			w.expect(at, "the change", ab)
			w.create("a2", 4, vcAnn("A", ""), *at)
			w.expect(at, "a2", ab)
			w.s.statusWG.Wait()
			cm, err := w.cs.CoreV1().ConfigMaps("ns").Get(context.Background(), AppliedCellsConfigMap("pal-cells"), metav1.GetOptions{})
			if err != nil || cm.Data[CellsKey] != shrinkAfter {
				t.Fatalf("after the change the copy of the cells in force reads %v (err %v), want the ConfigMap's", cm, err)
			}

			if c.after != "" {
				w.setCells(w.s.cfg, c.after)
				w.expect(at, "the bad ConfigMap", ab)
			}
			w.restart()
			if c.after != "" {
				w.setCells(w.s.cfg, c.after)
			}
			w.expect(at, "the restart", ab)
			w.expect(at, "a round on", ab)
			if err := w.s.ten.hived.Check(); err != nil {
				t.Fatalf("cells: %v", err)
			}
			if got := groupsOn(w); got != cells {
				t.Errorf("after the restart the cells hold %s, want %s (those before it)\n%s", got, cells, w.log.String())
			}
			if got := w.s.lastWhy["ns/pod:a2"]; !strings.HasSuffix(got, why) {
				t.Errorf("after the restart a2 waits with %q, want it to end %q", got, why)
			}
			if !strings.Contains(w.log.String(), c.say) {
				t.Errorf("the log does not say %q:\n%s", c.say, w.log.String())
			}
		})
	}
}

// A copy the apiserver refuses to take is tried again and said once, and
// scheduling goes on.
func TestCellsLastInForceWriteFails(t *testing.T) {
	w, at := hivedWorld(t, cellsFile(t, shrinkCells), 4, withCellsConfigMap, func(c *Config) { c.Namespace = "ns" })
	w.cs.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, AppliedCellsConfigMap("pal-cells"), errors.New("no RBAC"))
	})
	w.setCells(w.s.cfg, shrinkAfter)
	w.create("x", 4, vcAnn("A", ""), *at)
	w.expect(at, "x", "ns/x@n1[0,1,2,3]")
	retry := appliedCellsRetry
	appliedCellsRetry = 0 // each round tries again
	t.Cleanup(func() { appliedCellsRetry = retry })
	for _, what := range []string{"a round on", "another", "a third"} {
		w.s.statusWG.Wait()
		w.expect(at, what, "ns/x@n1[0,1,2,3]")
	}
	w.s.statusWG.Wait()
	if tries := func() (n int) {
		for _, a := range w.cs.Actions() {
			if a.Matches("create", "configmaps") {
				n++
			}
		}
		return n
	}(); tries < 3 {
		t.Errorf("the copy was tried %d times, want it tried again after a failure", tries)
	}
	if n := strings.Count(w.log.String(), "the cells in force not kept for a restart"); n != 1 {
		t.Errorf("the failed write said %d times, want once:\n%s", n, w.log.String())
	}
}

// The copy's name may not be one of the scheduler's other ConfigMaps.
func TestAppliedCellsConfigMapValidated(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*Config)
	}{
		{"variabilityConfigMap", func(c *Config) { c.VariabilityConfigMap = "cells-applied" }},
		{"learnedScoresConfigMap", func(c *Config) { c.LearnedScoresConfigMap = "cells-applied" }},
		{"evictedWorkConfigMap", func(c *Config) { c.EvictedWorkConfigMap = "cells-applied" }},
	} {
		cfg := DefaultConfig()
		cfg.CellsConfigMap = "cells"
		c.set(&cfg)
		err := cfg.validateAppliedCells()
		if err == nil || !strings.Contains(err.Error(), "field cellsConfigMap") || !strings.Contains(err.Error(), c.field) {
			t.Errorf("cells-applied as the %s: err %v, want one naming both fields", c.field, err)
		}
	}
	cfg := DefaultConfig()
	cfg.CellsConfigMap = "cells"
	if err := cfg.validateAppliedCells(); err != nil {
		t.Errorf("cellsConfigMap cells: %v", err)
	}
}
