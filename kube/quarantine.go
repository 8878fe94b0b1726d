package kube

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
)

// Quarantine on a cluster (quarantineAbove). The learner's belief of a
// GPU, DCGM's hints included, over the profile is the GPU's slowdown;
// one that reaches the threshold is quarantined until it falls below
// halfway back to 1 (variability.QuarantineNext). A quarantined GPU takes
// its class's slowest score in every class, so gangs of classes that care
// about speed are placed on it last; its node gets a Warning event, the
// gauge pal_gpu_quarantined is 1, and the learned ConfigMap says why
// (AnnQuarantined). Coming back gets a Normal event and the gauge 0.

const (
	// AnnQuarantined, on the learned ConfigMap, lists the GPUs in
	// quarantine and why: "NODE/INDEX: slowdown S (learned|dcgm) since
	// TIME", separated by "; " ("" when none is).
	AnnQuarantined = "pal.io/quarantined"
	// ReasonGPUQuarantined is the Warning event on a node one of whose
	// GPUs went into quarantine; ReasonGPUQuarantineLifted the Normal one
	// when it comes back.
	ReasonGPUQuarantined      = "GPUQuarantined"
	ReasonGPUQuarantineLifted = "GPUQuarantineLifted"
)

// quarantineEntry is why a GPU is in quarantine.
type quarantineEntry struct {
	Slowdown float64
	Source   string // "learned" (the jobs showed it) or "dcgm" (telemetry's hint)
	Since    time.Time
}

func (c *Config) validateQuarantine() error {
	switch {
	case c.QuarantineAbove == 0:
		return nil
	case !(c.QuarantineAbove > 1):
		return fmt.Errorf("field quarantineAbove: want a slowdown above 1 (1.5 = 50%% slower than the profile), or 0 for off; got %g", c.QuarantineAbove)
	case !c.LearnScores:
		return fmt.Errorf("field quarantineAbove: needs learnScores: true (the slowdown is the learner's belief over the profile)")
	}
	return nil
}

// quarantineRound applies the rule to the GPUs whose belief moved this
// round (L.moved, after syncKnown), and marks the scores placement uses
// when the learner gave new ones (rebinned) or the quarantine changed.
func (s *Scheduler) quarantineRound(now time.Time, rebinned bool) {
	L := s.learn
	above := s.cfg.QuarantineAbove
	if above == 0 || L.learner == nil || L.profile == nil {
		return
	}
	below := variability.DefaultQuarantineBelow(above)
	changed := false
	check, full := L.moved, false
	if L.qFor != L.learner {
		full = true
		// A new learner (a restart, a new GPU numbering): every GPU once,
		// so that beliefs read back from the learned ConfigMap count.
		L.qFor = L.learner
		check = make([]int, len(L.keys))
		for g := range check {
			check[g] = g
		}
	}
	for _, g := range check {
		if g >= len(L.keys) {
			continue
		}
		k := L.keys[g]
		sd := variability.Slowdown(L.learner.Belief, L.profile, g)
		e, was := L.quarantined[k]
		in := variability.QuarantineNext(above, below, was, sd)
		if in == was {
			if in && full {
				// Its node came back (a new learner): the gauge left
				// with it (forgetAbsent).
				s.metrics.learn.quarantined.WithLabelValues(k.Node, strconv.Itoa(k.Index)).Set(1)
			}
			continue
		}
		changed = true
		ref := corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: k.Node}
		gauge := s.metrics.learn.quarantined.WithLabelValues(k.Node, strconv.Itoa(k.Index))
		if in {
			src := "learned"
			if L.hints[g] > 1 {
				src = "dcgm"
			}
			e = quarantineEntry{Slowdown: sd, Source: src, Since: now}
			if r, ok := L.restored[k]; ok && r.Source == src {
				e.Since = r.Since // back in after a restart
			}
			L.quarantined[k] = e
			gauge.Set(1)
			msg := fmt.Sprintf("GPU %d runs %.3f times slower than its profile (%s), at or above quarantineAbove %s: placed last by every class until below %s", k.Index, sd, src, fmtFloat(above), fmtFloat(below))
			s.log.Warn("GPU quarantined", "node", k.Node, "gpu", k.Index, "slowdown", fmt.Sprintf("%.3f", sd), "source", src)
			s.events.post(ref, corev1.EventTypeWarning, ReasonGPUQuarantined, "Quarantine", msg)
			continue
		}
		delete(L.quarantined, k)
		delete(L.restored, k)
		gauge.Set(0)
		msg := fmt.Sprintf("GPU %d runs %.3f times its profile, below %s: out of quarantine (in since %s)", k.Index, sd, fmtFloat(below), e.Since.UTC().Format(time.RFC3339))
		s.log.Info("GPU out of quarantine", "node", k.Node, "gpu", k.Index, "slowdown", fmt.Sprintf("%.3f", sd))
		s.events.post(ref, corev1.EventTypeNormal, ReasonGPUQuarantineLifted, "Quarantine", msg)
	}
	if full {
		// What the ConfigMap recorded of a GPU the jobs put in has served
		// (its date) once every GPU has been checked; DCGM's stay until
		// DCGM says the GPU is no longer flagged or is busy (learnHints),
		// which may be after the first check.
		for k, r := range L.restored {
			if r.Source == "learned" {
				delete(L.restored, k)
			}
		}
	}
	if changed {
		L.qgen++
	}
	if !changed && !rebinned {
		return
	}
	if L.unmarked == nil {
		L.unmarked = s.scores
	}
	if L.unmarked != nil {
		s.scores = L.markQuarantined(L.unmarked)
	}
}

// markQuarantined is sc with every quarantined GPU given its class's
// slowest score (sc itself when none is).
func (L *learnStage) markQuarantined(sc *policy.Scores) *policy.Scores {
	if len(L.quarantined) == 0 {
		return sc
	}
	return sc.WithSlowest(func(g int) bool {
		if g >= len(L.keys) {
			return false
		}
		_, ok := L.quarantined[L.keys[g]]
		return ok
	})
}

// quarantineText is AnnQuarantined's value, by node and index.
func (L *learnStage) quarantineText() string {
	keys := make([]GPUKey, 0, len(L.quarantined))
	for k := range L.quarantined {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, GPUKey.Compare)
	parts := make([]string, len(keys))
	for i, k := range keys {
		e := L.quarantined[k]
		parts[i] = fmt.Sprintf("%s/%d: slowdown %.3f (%s) since %s", k.Node, k.Index, e.Slowdown, e.Source, e.Since.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, "; ")
}

// syncTenancyQuarantine hands the quarantine to the cells under hived*
// (tenant.HiveD.SetQuarantine): a quarantined GPU is a bad cell of one
// device, out of every VC's guarantee. It acts only when the quarantine
// changed (or the cells did: a reconfiguration carries the quarantined
// devices over itself, and the cells' GPU ids are new).
func (s *Scheduler) syncTenancyQuarantine() {
	t, L := s.ten, s.learn
	if t == nil || t.hived == nil || L == nil || s.cfg.QuarantineAbove == 0 {
		return
	}
	if t.qlayout == t.l && t.qgen == L.qgen && t.qlearn == L {
		return
	}
	if t.qlayout != t.l {
		// Start from what the new cells carried over, not from nothing: a
		// device lifted since the cells were last told is still
		// quarantined in them and must be given back.
		t.quar, t.qlayout = map[int]bool{}, t.l
		for _, q := range t.hived.Cells().Quarantined() {
			for _, n := range t.l.Cluster.Nodes {
				if n.Name == q.Node && q.GPU >= 0 && q.GPU < len(n.GPUs) {
					t.quar[n.GPUs[q.GPU]] = true
				}
			}
		}
	}
	t.qgen, t.qlearn = L.qgen, L
	for _, n := range t.l.Cluster.Nodes {
		for d, g := range n.GPUs {
			_, on := L.quarantined[GPUKey{n.Name, d}]
			if on == t.quar[g] {
				continue
			}
			if err := t.hived.SetQuarantine(g, on); err != nil {
				s.log.Error("tenancy: quarantine not applied to the cells", "node", n.Name, "gpu", d, "err", err)
				continue
			}
			t.quar[g] = on
		}
	}
}

// parseQuarantined reads AnnQuarantined's value (quarantineText's form:
// "NODE/INDEX: slowdown S (learned|dcgm) since RFC3339", joined by "; ").
// Errors name the entry by its place.
func parseQuarantined(v string) (map[GPUKey]quarantineEntry, error) {
	out := map[GPUKey]quarantineEntry{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	const most = 1 << 20 // GPUs: a bound on what a crafted value can ask for
	parts := strings.Split(v, "; ")
	if len(parts) > most {
		return nil, fmt.Errorf("%d entries: want at most %d", len(parts), most)
	}
	for i, p := range parts {
		bad := func(why string) error {
			return fmt.Errorf("entry %d %s: %s; want \"NODE/INDEX: slowdown S (learned|dcgm) since TIME\"", i+1, quote.Value(p), why)
		}
		gpu, rest, ok := strings.Cut(p, ": slowdown ")
		if !ok {
			return nil, bad("no \": slowdown \"")
		}
		slash := strings.LastIndexByte(gpu, '/')
		if slash <= 0 {
			return nil, bad("no NODE/INDEX")
		}
		idx, err := strconv.Atoi(gpu[slash+1:])
		if err != nil || idx < 0 {
			return nil, bad("GPU index is not a count >= 0")
		}
		f := strings.Fields(rest)
		if len(f) != 4 || f[2] != "since" {
			return nil, bad("want slowdown, source, \"since\" and a time")
		}
		sd, err := strconv.ParseFloat(f[0], 64)
		if err != nil || !(sd >= 1) || math.IsInf(sd, 1) {
			return nil, bad("slowdown is not a number >= 1")
		}
		src := strings.TrimSuffix(strings.TrimPrefix(f[1], "("), ")")
		if src != "learned" && src != "dcgm" || f[1] != "("+src+")" {
			return nil, bad("source is not (learned) or (dcgm)")
		}
		since, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			return nil, bad("time is not RFC 3339")
		}
		k := GPUKey{Node: gpu[:slash], Index: idx}
		if _, dup := out[k]; dup {
			return nil, bad("GPU listed twice")
		}
		out[k] = quarantineEntry{Slowdown: sd, Source: src, Since: since}
	}
	return out, nil
}
