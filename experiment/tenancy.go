package experiment

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Tenancy modes of `pal sim --tenancy`.
var tenancyModes = []string{"none", "quota", "hived", "hived-pm", "hived-speed", "private"}

func (o Options) tenancyOn() bool { return o.Tenancy != "" && o.Tenancy != "none" }

func (o Options) validateTenancy() error {
	if !slices.Contains(tenancyModes, o.Tenancy) && o.Tenancy != "" {
		return fmt.Errorf("--tenancy %s: want none, quota, hived, hived-pm, hived-speed or private", quote.Value(o.Tenancy))
	}
	if !o.tenancyOn() && o.Cells != "" {
		return fmt.Errorf("--cells %s needs --tenancy quota, hived, hived-pm, hived-speed or private", o.Cells)
	}
	if o.Scheduler == SchedulerThemis && o.Tenancy == "quota" {
		return fmt.Errorf("--tenancy quota with --scheduler themis: not supported (a quota VC places on the shared cluster, where Themis' leases would span VCs); use hived, hived-pm, private or none")
	}
	if o.PrivateDraws < 0 || (o.PrivateDraws > 0 && o.Tenancy != "private") {
		return fmt.Errorf("--private-draws %d: want a draw count >= 1 with --tenancy private (0: off)", o.PrivateDraws)
	}
	if o.NodeEvents != "" && !o.hived() {
		return fmt.Errorf("--node-events %s needs --tenancy hived, hived-pm or hived-speed (the stages that track bad nodes)", o.NodeEvents)
	}
	if o.CellsEvents != "" && (!o.hived() || o.Cells == "") {
		return fmt.Errorf("--cells-events %s needs --tenancy hived, hived-pm or hived-speed and --cells (the config it changes)", o.CellsEvents)
	}
	return nil
}

// setupTenancy loads the cells (or makes the default: one VC holding the
// whole --cluster), takes the cluster from them, and checks every job
// against its VC before the first round.
func (in *Inputs) setupTenancy() error {
	o := in.Opts
	if err := o.validateTenancy(); err != nil {
		return err
	}
	if !o.tenancyOn() {
		return in.checkPods()
	}
	var cfg *tenancy.Config
	var err error
	if o.Cells != "" {
		if cfg, err = tenancy.LoadFile(o.Cells); err != nil {
			return err
		}
		if w := cfg.Warning(); w != "" {
			in.Warnings = append(in.Warnings, w)
		}
	} else if cfg, err = tenant.UniformCells(in.Cluster); err != nil {
		return err
	}
	if in.Layout, err = tenant.NewLayout(cfg); err != nil {
		return err
	}
	if o.Cells != "" && slices.Contains(o.Explicit.Flags, "cluster") && in.Cluster.String() != in.Layout.Cluster.String() {
		return fmt.Errorf("--cluster %s: the cells file %s describes a %s cluster, and with --cells the cluster is the cells file's; leave --cluster out or make them agree", o.Cluster, o.Cells, in.Layout.Cluster)
	}
	in.Cluster = in.Layout.Cluster
	if o.NodeEvents != "" {
		if in.nodeEvents, err = readNodeEvents(o.NodeEvents, in.Cluster); err != nil {
			return err
		}
	}
	if err := in.Layout.Validate(in.Trace, o.hived()); err != nil {
		return err
	}
	if o.CellsEvents != "" {
		if in.cellsEvents, err = loadCellsEvents(o.CellsEvents, in.Layout, in.Trace); err != nil {
			return err
		}
		for _, e := range in.cellsEvents {
			if w := e.cfg.Warning(); w != "" {
				in.Warnings = append(in.Warnings, w)
			}
		}
	}
	return nil
}

func (o Options) hived() bool {
	return o.Tenancy == "hived" || o.Tenancy == "hived-pm" || o.Tenancy == "hived-speed"
}

// readNodeEvents reads `time_s,node,event` rows (event down or up; node
// by name), in time order.
func readNodeEvents(path string, c *cluster.Cluster) ([]sim.NodeEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseNodeEvents(path, f, c)
}

// parseNodeEvents is readNodeEvents on a reader; name is the file's, for
// errors.
func parseNodeEvents(name string, r io.Reader, c *cluster.Cluster) ([]sim.NodeEvent, error) {
	t, err := csvin.Open(name, r, csvin.Known("time_s", "node", "event"), csvin.EmptyMsg("empty file (want a header time_s,node,event)"))
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("time_s", "node", "event")
	if err != nil {
		return nil, err
	}
	byName := map[string]int{}
	for i, n := range c.Nodes {
		byName[n.Name] = i
	}
	var out []sim.NodeEvent
	for t.Next() {
		at, err := t.Float(cols[0])
		if err != nil {
			return nil, err
		}
		if at < 0 || (len(out) > 0 && at < out[len(out)-1].T) {
			return nil, t.Errorf(cols[0], "%g s is negative or before the previous event", at)
		}
		name, err := t.Field(cols[1])
		if err != nil {
			return nil, err
		}
		node, ok := byName[name]
		if !ok {
			return nil, t.Errorf(cols[1], "unknown node %s (the cluster's nodes: %s)", quote.Value(name), nodeSample(c))
		}
		ev, err := t.Field(cols[2])
		if err != nil {
			return nil, err
		}
		if ev != "down" && ev != "up" {
			return nil, t.Errorf(cols[2], "%s is not down or up", quote.Value(ev))
		}
		out = append(out, sim.NodeEvent{T: at, Node: node, Up: ev == "up"})
	}
	return out, t.Err()
}

// nodeSample names a cluster's nodes for an error: all of them up to
// eight, else the first six, the last and the count.
func nodeSample(c *cluster.Cluster) string {
	names := make([]string, 0, min(len(c.Nodes), 8))
	for i, n := range c.Nodes {
		if len(c.Nodes) > 8 && i == 6 {
			names = append(names, "...", c.Nodes[len(c.Nodes)-1].Name)
			return strings.Join(names, ", ") + fmt.Sprintf(" (%d nodes)", len(c.Nodes))
		}
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

// TenancyDescription is the tenancy line of the output header ("" off).
func (in *Inputs) TenancyDescription() string {
	if in.Layout == nil {
		return ""
	}
	how := map[string]string{
		"quota":       "quota: one queue per VC (its own scheduler and placement), each VC holding at most its GPU count of the shared cluster's GPUs",
		"hived":       "hived: each VC runs its own scheduler and placement on its view of its cells (its private cluster's shape); buddy allocation binds the cells",
		"hived-pm":    "hived-pm: as hived, and among equally safe cells binding picks the GPUs with the best PM-scores for the job's class",
		"hived-speed": "hived-speed: as hived-pm, and binding keeps each VC's mean GPU score at or below the cluster's (the slowest free cell that does, else the fastest)",
		"private":     "private: each VC runs alone on a cluster of its own cells",
	}[in.Opts.Tenancy]
	s := fmt.Sprintf("%s; cells %s", how, in.Layout.Cells.File)
	if in.Opts.NodeEvents != "" {
		s += fmt.Sprintf("; %d node event(s) from %s", len(in.nodeEvents), in.Opts.NodeEvents)
	}
	if in.Opts.CellsEvents != "" {
		s += fmt.Sprintf("; %d cells change(s) from %s", len(in.cellsEvents), in.Opts.CellsEvents)
	}
	return s
}

func (in *Inputs) addTenancy(cfg *sim.Config, placement string) error {
	if in.Layout == nil {
		return nil
	}
	if baseline.Is(in.Opts.Scheduler) {
		return fmt.Errorf("--scheduler %s plans the whole cluster and does not run under --tenancy", in.Opts.Scheduler)
	}
	// Each VC orders its own queue with its own scheduler, under every
	// tenancy mode and in the private reference alike.
	spec := in.Opts.Spec(placement)
	per, err := registry.PerVC(spec, in.Layout, cfg.Scheduler)
	if err != nil {
		return err
	}
	cfg.Scheduler = per
	cfg.CheckInvariants = in.Opts.CheckInvariants
	cfg.NodeEvents = in.nodeEvents
	if !in.Opts.hived() && in.Opts.Tenancy != "quota" {
		return nil // private: runPrivate runs each VC on its own cluster
	}
	iv := in.intraVC(placement, cfg.Scheduler, in.Opts.hived())
	stage, err := registry.NewTenancy(spec, in.Layout, iv)
	if err != nil {
		return err
	}
	if h, ok := stage.(*tenant.HiveD); ok && (in.Opts.Tenancy == "hived-pm" || in.Opts.Tenancy == "hived-speed") {
		if err := h.UseScores(in.Scores); err != nil {
			return err
		}
	}
	if h, ok := stage.(*tenant.HiveD); ok {
		for _, e := range in.cellsEvents {
			cells := e.cfg
			cfg.StageEvents = append(cfg.StageEvents, sim.StageEvent{T: e.t, What: fmt.Sprintf("cells change %s (%s:%d)", cells.File, in.Opts.CellsEvents, e.line),
				Apply: func() error { _, err := h.Reconfigure(cells); return err }})
		}
	}
	cfg.Tenancy = stage
	return nil
}

// intraVC is how each VC's placer is made: the run's placement (or, under
// Themis, a Themis of the VC's own over its cells, on the round's clock;
// the top-level policy only orders). Under hived (view true) a VC's
// placer sees its view with the scores and the placement stream its
// private cluster's run has (privateScores, the seed).
func (in *Inputs) intraVC(placement string, sched policy.Scheduler, view bool) *tenant.IntraVC {
	iv := &tenant.IntraVC{NewPlacer: func() (policy.Placer, error) { return in.newPlacer(placement) }}
	if top, ok := sched.(*themis.Policy); ok {
		iv.NewPlacer = registry.VCThemis(in.Opts.Spec(placement), top)
	}
	if view {
		iv.Env = func(_ string, c *cluster.Cluster) (policy.Env, error) {
			_, sc, err := in.privateScores(c)
			if err != nil {
				return policy.Env{}, err
			}
			return policy.Env{Cluster: c, Scores: sc, Rand: sim.PlacementRand(in.Opts.Seed), Locality: in.Locality}, nil
		}
	}
	return iv
}

// runPrivate runs each VC's jobs alone on a cluster of the VC's own cells
// with the same scheduler and placement, and merges the job records: the
// reference of the sharing-anomaly metric. With --private-draws K each
// VC's cluster is its cells drawn K times from the physical cluster, one
// run per draw, and the records of all K runs are pooled.
func (in *Inputs) runPrivate(placement string, progress func(sim.Status)) (*RunResult, error) {
	base, err := in.Config(placement)
	if err != nil {
		return nil, err
	}
	probe, err := tenancy.New(in.Layout.Cells)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out := &RunResult{Trace: in.Opts.Trace, Scheduler: base.Scheduler.Name(), Placement: base.Placer.Name(),
		Draws: in.Opts.PrivateDraws, ClusterSpeed: clusterSpeed(base.Raw)}
	busy, capacity := 0.0, 0.0
	var acc vcAcc
	for _, vc := range in.Layout.VCs() {
		var jobs []workload.Spec
		for _, j := range in.Trace.Jobs {
			if in.Layout.VCOf(&j) == vc {
				jobs = append(jobs, j)
			}
		}
		if len(jobs) == 0 {
			continue
		}
		pcfg, err := probe.PrivateConfig(vc)
		if err != nil {
			return nil, err
		}
		pl, err := tenant.NewLayout(pcfg)
		if err != nil {
			return nil, err
		}
		var rng *rand.Rand
		if in.Opts.PrivateDraws > 0 {
			rng = rand.New(rand.NewPCG(in.Opts.Seed, privateDrawStream(vc)))
		}
		for range max(1, in.Opts.PrivateDraws) {
			cfg, err := in.Config(placement) // fresh scheduler and placer per VC and draw
			if err != nil {
				return nil, err
			}
			cfg.Cluster = pl.Cluster
			cfg.Trace = &workload.Trace{Name: in.Trace.Name + " (VC " + vc + ")", Jobs: jobs, HasTracked: in.Trace.HasTracked}
			cfg.Tenancy = nil
			if rng != nil {
				cfg.Raw, cfg.Scores, err = in.drawnScores(probe, vc, pl.Cluster, base.Raw, rng)
			} else {
				cfg.Raw, cfg.Scores, err = in.privateScores(pl.Cluster)
			}
			if err != nil {
				return nil, err
			}
			if pl.Pooled(vc) {
				// Pinned cells or several leaf types: the jobs' pinned cells and
				// leaf types hold on the private cluster too, through the stage
				// that honours them (the VC alone in it).
				if cfg.Scheduler, err = registry.PerVC(in.Opts.Spec(placement), pl, cfg.Scheduler); err != nil {
					return nil, err
				}
				h, err := tenant.NewHiveD(pl)
				if err != nil {
					return nil, err
				}
				iv := in.intraVC(placement, cfg.Scheduler, true)
				if rng != nil {
					sc := cfg.Scores
					iv.Env = func(_ string, c *cluster.Cluster) (policy.Env, error) {
						return policy.Env{Cluster: c, Scores: sc, Rand: sim.PlacementRand(in.Opts.Seed), Locality: in.Locality}, nil
					}
				}
				h.SetIntraVC(iv)
				cfg.Tenancy = h
			}
			cfg.Progress = progress
			cfg.NoRecords = false // the summary below merges the VCs' records
			res, err := sim.Run(cfg)
			if err != nil {
				if cfg.Trace.TrackedCount() == 0 {
					break
				}
				return nil, fmt.Errorf("private cluster of VC %s: %w", vc, err)
			}
			acc.add(res.Jobs, cfg.Raw)
			out.JobRecords = append(out.JobRecords, res.Jobs...)
			out.RoundStats = append(out.RoundStats, res.Rounds...)
			out.Rounds = max(out.Rounds, res.NumRounds)
			end := float64(res.NumRounds) * cfg.Round
			capacity += end * float64(pl.Cluster.Size())
			busy += res.Summary.Utilization * end * float64(pl.Cluster.Size())
		}
	}
	slices.SortStableFunc(out.JobRecords, func(a, b metrics.JobRecord) int { return a.ID - b.ID })
	for i := range out.JobRecords {
		out.JobRecords[i].Origin = in.Origin(out.JobRecords[i].ID)
	}
	out.Summary = metrics.Summarize(out.JobRecords, busy, capacity)
	out.VCs = acc.figures(in.Layout.VCs())
	out.WallMS = float64(time.Since(start).Microseconds()) / 1000
	return out, nil
}

// privateDrawStream is the random stream of a VC's private draws: its
// own, so that adding a VC never moves another's draws.
func privateDrawStream(vc string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("private-draws/" + vc))
	return h.Sum64()
}

// drawnScores draws which physical GPUs a VC's private cluster c has and
// gives it their values: the true ones (truth, the shared cluster's) that
// progress follows, and PM-scores binned from the believed ones.
func (in *Inputs) drawnScores(probe *tenancy.Scheduler, vc string, c *cluster.Cluster, truth *variability.Table, rng *rand.Rand) (*variability.Table, *policy.Scores, error) {
	leaves, err := probe.PrivateDraw(vc, rng)
	if err != nil {
		return nil, nil, err
	}
	if len(leaves) != c.Size() {
		return nil, nil, fmt.Errorf("private cluster of VC %s: %d GPUs drawn for a cluster of %d", vc, len(leaves), c.Size())
	}
	ids := make([]int, len(leaves))
	for i, l := range leaves {
		g, ok := in.Layout.GPU(l.Node, l.GPU)
		if !ok {
			return nil, nil, fmt.Errorf("private cluster of VC %s: device %d of node %s is not in the cluster", vc, l.GPU, l.Node)
		}
		ids[i] = g
	}
	p := *in
	p.Cluster = c
	p.Raw = subTable(in.Raw, ids)
	if err := p.bin(); err != nil {
		return nil, nil, err
	}
	if truth == nil {
		truth = in.Raw
	}
	return subTable(truth, ids), p.Scores, nil
}

// hasPods says whether any job of the trace has pods (pod_gpus).
func (in *Inputs) hasPods() bool { return in.Trace.HasPods() }

// privateScores gives a VC's private cluster its GPU values: drawn from the
// profile with the run's seed (the shared cluster's values belong to other
// GPUs), or, when --gpu-scores pins the shared cluster's, uniform (median)
// speeds with a one-bin score table.
func (in *Inputs) privateScores(c *cluster.Cluster) (*variability.Table, *policy.Scores, error) {
	if in.Opts.GPUScores != "" {
		sc := &policy.Scores{}
		for k := range sc.SF {
			sc.SF[k] = make([]float64, c.Size())
			for g := range sc.SF[k] {
				sc.SF[k][g] = 1
			}
			sc.LV[k] = []policy.LVStep{{V: 1}, {V: 1, Across: true}}
		}
		return nil, sc, nil
	}
	p := *in
	p.Cluster = c
	p.Opts.Pinned = false
	raw, _, err := p.loadRaw()
	if err != nil {
		return nil, nil, err
	}
	p.Raw = raw
	if err := p.bin(); err != nil {
		return nil, nil, err
	}
	return raw, p.Scores, nil
}

// checkPods refuses, before the first round, a pod larger than every node:
// it could never run.
func (in *Inputs) checkPods() error {
	most := 0
	for _, n := range in.Cluster.Nodes {
		most = max(most, len(n.GPUs))
	}
	if !in.Trace.HasPods() {
		return nil // and a streamed trace is not read again
	}
	return in.Trace.Each(func(j *workload.Spec) error {
		if j.PodGPUs > most {
			return fmt.Errorf("%s:%d: field \"pod_gpus\": job %d has pods of %d GPUs but the largest node of %s has %d", j.Source, j.Line, j.ID, j.PodGPUs, in.Cluster, most)
		}
		return nil
	})
}
