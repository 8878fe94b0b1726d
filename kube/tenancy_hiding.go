package kube

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// PlaceHiding implements policy.HidingPlacer when the VC's placer does
// (Themis: see themis.InVC.PlaceHiding), with Place's keeping of running
// gangs.
func (k keepRunning) PlaceHiding(env *policy.Env, order []*workload.Job, hidden func(int) bool) [][]int {
	h, _ := policy.Hiding(k.Placer)
	return keepRunning{answer{k.Placer, h.PlaceHiding(env, order, hidden)}}.Place(env, order)
}

// Hides says whether the VC's placer is a policy.HidingPlacer.
func (k keepRunning) Hides() bool { _, ok := policy.Hiding(k.Placer); return ok }

// answer is a placer whose answer is already made.
type answer struct {
	policy.Placer
	out [][]int
}

func (a answer) Place(*policy.Env, []*workload.Job) [][]int { return a.out }
