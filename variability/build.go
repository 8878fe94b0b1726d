package variability

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// BuildOptions configures Build.
type BuildOptions struct {
	// ClassOf gives a benchmarked model's class; an error names why it
	// has none. Required.
	ClassOf func(model string) (Class, error)
	// Nodes and GPUsPerNode fix the grid when every node is an integer
	// (the simulator's --cluster); 0 infers them from the largest node
	// and gpu_index seen. Named nodes ignore them.
	Nodes, GPUsPerNode int
	// MinSamples is the number of runs per GPU and model below which the
	// report flags a GPU (0 means 3).
	MinSamples int
}

// GPURef names one GPU of a built table in a report.
type GPURef struct {
	GPU   int     `json:"gpu"`
	Node  string  `json:"node"`
	Index int     `json:"gpu_index"`
	Value float64 `json:"value"`
	// Model is set where the entry is about one model's runs.
	Model string `json:"model,omitempty"`
}

// ClassBuild is the report of one class.
type ClassBuild struct {
	Class string `json:"class"`
	// Models are the benchmarked models of this class, sorted.
	Models []string `json:"models"`
	Runs   int      `json:"runs"`
	// Measured is the number of GPUs with at least one run; the others
	// (Unmeasured) get 1.0, the class median.
	Measured   int      `json:"measured_gpus"`
	Unmeasured []GPURef `json:"unmeasured,omitempty"`
	// Min, Max and Spread (Max/Min) are over the measured GPUs' values;
	// CV is their coefficient of variation (sample std / mean).
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Spread float64 `json:"spread"`
	CV     float64 `json:"cv"`
	// Outliers are the GPUs above Threshold (mean + 3 sample std, the
	// rule binning gives outliers their own bin by).
	Outliers  []GPURef `json:"outliers,omitempty"`
	Threshold float64  `json:"outlier_threshold"`
	// FewSamples are GPUs with fewer than MinSamples runs of a model
	// (Value is the count).
	FewSamples []GPURef `json:"few_samples,omitempty"`
	// Repeat noise is each (GPU, model)'s coefficient of variation over
	// its repetitions: the median over all of them, and the worst one.
	RepeatNoiseMedian float64 `json:"repeat_noise_median"`
	RepeatNoiseWorst  *GPURef `json:"repeat_noise_worst,omitempty"`
}

// BuildReport says what Build made of a measurement file.
type BuildReport struct {
	Source     string `json:"source"`
	Rows       int    `json:"rows"`
	GPUs       int    `json:"gpus"`
	Layout     string `json:"layout"`
	MinSamples int    `json:"min_samples"`
	// ModelClass is the class each benchmarked model was given.
	ModelClass map[string]string `json:"model_class"`
	Classes    []ClassBuild      `json:"classes"`
	// LowClock are GPUs whose median SM clock is under 90% of the
	// cluster's median SM clock (Value is the ratio), when the file has
	// clocks: a throttled GPU's speed will not last.
	LowClock []GPURef `json:"low_clock,omitempty"`
	// Hot is the hottest GPU's median temperature, when the file has one.
	Hot *GPURef `json:"hottest,omitempty"`
}

// gpuPos is a GPU's place: its node and device index.
type gpuPos struct {
	node  string
	index int
}

// Build turns benchmark runs into a per-GPU score table: for each model,
// each GPU's typical run (runMean: the mean of its runs once runs far
// from their median are set aside) divided by the median over GPUs of
// those (the paper's per-application performance normalised to the
// median GPU);
// for each class, the geometric mean over the class's models measured on
// the GPU, divided again by the class's median GPU so that 1.0 is the
// median. A class nobody benchmarked, and a GPU a class never ran on, get
// 1.0 — the median GPU — and the report says so.
func Build(m *Measurements, opts BuildOptions) (*GPUScores, *BuildReport, error) {
	if opts.ClassOf == nil {
		return nil, nil, fmt.Errorf("build: no model-to-class mapping")
	}
	minS := opts.MinSamples
	if minS <= 0 {
		minS = 3
	}
	ids, pos, nodeID, layout, named, err := layoutGPUs(m, opts)
	if err != nil {
		return nil, nil, err
	}
	n := len(pos)

	// One GPU, one UUID, and one UUID, one GPU.
	uuid := make([]string, n)
	uuidLine := make([]int, n)
	uuidAt := map[string]int{}
	for i, r := range m.Rows {
		g := ids[i]
		if r.UUID == "" {
			continue
		}
		if uuid[g] != "" && uuid[g] != r.UUID {
			return nil, nil, &InputError{File: m.Name, Line: r.Line, Field: "gpu_uuid",
				Msg: fmt.Sprintf("node %s gpu_index %d was %s on line %d (a GPU swapped between runs needs a fresh profile)", r.Node, r.GPUIndex, uuid[g], uuidLine[g])}
		}
		if h, ok := uuidAt[r.UUID]; ok && h != g {
			return nil, nil, &InputError{File: m.Name, Line: r.Line, Field: "gpu_uuid",
				Msg: fmt.Sprintf("%s is also node %s gpu_index %d (line %d)", r.UUID, pos[h].node, pos[h].index, uuidLine[h])}
		}
		uuid[g], uuidLine[g], uuidAt[r.UUID] = r.UUID, r.Line, g
	}

	// Runs per model and GPU.
	modelClass := map[string]Class{}
	runs := map[string][][]float64{}
	for _, r := range m.Rows {
		if _, ok := modelClass[r.Model]; ok {
			continue
		}
		c, err := opts.ClassOf(r.Model)
		if err != nil {
			return nil, nil, &InputError{File: m.Name, Line: r.Line, Field: "model", Msg: err.Error()}
		}
		modelClass[r.Model] = c
		runs[r.Model] = make([][]float64, n)
	}
	for i, r := range m.Rows {
		runs[r.Model][ids[i]] = append(runs[r.Model][ids[i]], r.IterTime)
	}
	models := make([]string, 0, len(runs))
	for md := range runs {
		models = append(models, md)
	}
	sort.Strings(models)

	ref := func(g int, v float64, model string) GPURef {
		return GPURef{GPU: g, Node: pos[g].node, Index: pos[g].index, Value: v, Model: model}
	}
	rep := &BuildReport{Source: m.Name, Rows: len(m.Rows), GPUs: n, Layout: layout, MinSamples: minS, ModelClass: map[string]string{}}
	for md, c := range modelClass {
		rep.ModelClass[md] = c.String()
	}
	out := &GPUScores{Table: &Table{}, Node: nodeID, UUID: uuid, Line: make([]int, n),
		NodeName: make([]string, n), Index: make([]int, n)}
	for g, p := range pos {
		out.NodeName[g], out.Index[g] = p.node, p.index
	}
	if !named {
		// The simulator's layout: Node_ID is the node, nothing to name.
		out.NodeName, out.Index = nil, nil
	}
	for c := range Class(NumClasses) {
		cb := ClassBuild{Class: c.String(), Models: []string{}}
		logSum := make([]float64, n)
		count := make([]int, n)
		var noise []float64
		for _, md := range models {
			if modelClass[md] != c {
				continue
			}
			cb.Models = append(cb.Models, md)
			med := make([]float64, n)
			var measured []float64
			for g, rs := range runs[md] {
				if len(rs) == 0 {
					continue
				}
				cb.Runs += len(rs)
				med[g] = runMean(rs)
				measured = append(measured, med[g])
				if len(rs) < minS {
					cb.FewSamples = append(cb.FewSamples, ref(g, float64(len(rs)), md))
				}
				if len(rs) >= 2 {
					cv := coefVar(rs)
					noise = append(noise, cv)
					if cb.RepeatNoiseWorst == nil || cv > cb.RepeatNoiseWorst.Value {
						w := ref(g, cv, md)
						cb.RepeatNoiseWorst = &w
					}
				}
			}
			mm := median(measured)
			for g := range n {
				if med[g] > 0 {
					logSum[g] += math.Log(med[g] / mm)
					count[g]++
				}
			}
		}
		vals := make([]float64, n)
		var measured []float64
		for g := range n {
			if count[g] > 0 {
				vals[g] = math.Exp(logSum[g] / float64(count[g]))
				measured = append(measured, vals[g])
			}
		}
		cb.Measured = len(measured)
		if len(measured) > 0 {
			cm := median(measured)
			measured = measured[:0]
			for g := range n {
				if count[g] > 0 {
					vals[g] /= cm
					if !(vals[g] > 0) || math.IsInf(vals[g], 0) {
						return nil, nil, &InputError{File: m.Name, Field: "iter_time_s",
							Msg: fmt.Sprintf("class %s: values span too wide a range to normalise", c)}
					}
					measured = append(measured, vals[g])
				}
			}
			cb.Min, cb.Max = slices.Min(measured), slices.Max(measured)
			cb.Spread = cb.Max / cb.Min
			cb.CV = coefVar(measured)
			out, thr := Outliers(measured)
			cb.Threshold = thr
			if math.IsInf(thr, 0) {
				cb.Threshold = 0
			}
			// Outliers indexes the measured GPUs; map back to GPU ids.
			k, j := 0, 0
			for g := range n {
				if count[g] == 0 {
					continue
				}
				if k < len(out) && out[k] == j {
					cb.Outliers = append(cb.Outliers, ref(g, vals[g], ""))
					k++
				}
				j++
			}
		}
		for g := range n {
			if count[g] == 0 {
				vals[g] = 1
				if len(measured) > 0 {
					cb.Unmeasured = append(cb.Unmeasured, ref(g, 1, ""))
				}
			}
		}
		if len(noise) > 0 {
			cb.RepeatNoiseMedian = median(noise)
		}
		out.Table.Values[c] = vals
		rep.Classes = append(rep.Classes, cb)
	}
	telemetry(m, ids, n, ref, rep)
	return out, rep, nil
}

// telemetry adds the clock and temperature findings.
func telemetry(m *Measurements, ids []int, n int, ref func(int, float64, string) GPURef, rep *BuildReport) {
	clock := make([][]float64, n)
	temp := make([][]float64, n)
	for i, r := range m.Rows {
		if !math.IsNaN(r.SMClock) {
			clock[ids[i]] = append(clock[ids[i]], r.SMClock)
		}
		if !math.IsNaN(r.Temp) {
			temp[ids[i]] = append(temp[ids[i]], r.Temp)
		}
	}
	var meds []float64
	gc := make([]float64, n)
	for g, cs := range clock {
		if len(cs) > 0 {
			gc[g] = median(cs)
			meds = append(meds, gc[g])
		}
	}
	if len(meds) > 0 {
		cm := median(meds)
		for g := range n {
			if len(clock[g]) > 0 && cm > 0 && gc[g] < 0.9*cm {
				rep.LowClock = append(rep.LowClock, ref(g, gc[g]/cm, ""))
			}
		}
	}
	for g, ts := range temp {
		if len(ts) == 0 {
			continue
		}
		if t := median(ts); rep.Hot == nil || t > rep.Hot.Value {
			h := ref(g, t, "")
			rep.Hot = &h
		}
	}
}

// runMean is one GPU's typical iteration time from its repetitions: the
// mean of its runs, leaving out a run that is both more than 10% from
// their median and outside 3 scaled MADs (1.4826 x the median absolute
// deviation, the normal-consistent spread) of it. Why not the
// plain median: with light-tailed repeat noise the median of five runs
// has about twice the variance of their mean (uniform noise: 0.143 a²
// against 0.067 a² for noise in [-a, a]), and in a class whose GPUs
// differ by a few percent that error is what moves a GPU across a bin
// boundary. Why not the plain mean: one disturbed run (a co-tenant, a
// warm-up) would shift it; such runs lie far outside the others' spread
// and are set aside. Both tests must hold because the MAD of five runs
// is itself noisy: alone it would discard ordinary runs whenever three of
// them happen to agree closely.
func runMean(rs []float64) float64 {
	m := median(rs)
	dev := make([]float64, len(rs))
	for i, r := range rs {
		dev[i] = math.Abs(r - m)
	}
	lim := max(3*1.4826*median(dev), 0.1*m)
	sum, n := 0.0, 0
	for i, r := range rs {
		if dev[i] <= lim {
			sum += r / float64(len(rs)) // scaled first: huge times cannot overflow
			n++
		}
	}
	return sum * float64(len(rs)) / float64(n)
}

// coefVar is sample std / mean (0 for fewer than two values).
func coefVar(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	if mean == 0 {
		return 0
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / mean
}

// layoutGPUs gives every row its GPU id. When every node is an integer
// the ids are the simulator's (node x GPUs per node + gpu_index) and the
// grid must be complete; otherwise nodes are ranked by name and GPUs
// numbered node by node in gpu_index order.
func layoutGPUs(m *Measurements, opts BuildOptions) (ids []int, pos []gpuPos, nodeID []int, layout string, named bool, err error) {
	ints := true
	for _, r := range m.Rows {
		if _, ok := intNode(r.Node); !ok {
			ints = false
			break
		}
	}
	ids = make([]int, len(m.Rows))
	if ints {
		nodes, per := opts.Nodes, opts.GPUsPerNode
		first := map[int]int{} // GPU id -> first line
		maxNode, maxIdx := 0, 0
		for _, r := range m.Rows {
			nd, _ := intNode(r.Node)
			maxNode, maxIdx = max(maxNode, nd), max(maxIdx, r.GPUIndex)
		}
		how := "--cluster"
		if per <= 0 {
			nodes, per, how = maxNode+1, maxIdx+1, "the largest node and gpu_index"
		}
		for i, r := range m.Rows {
			nd, _ := intNode(r.Node)
			if nd >= nodes {
				return nil, nil, nil, "", false, &InputError{File: m.Name, Line: r.Line, Field: "node",
					Msg: fmt.Sprintf("node %d is outside the %dx%d cluster", nd, nodes, per)}
			}
			if r.GPUIndex >= per {
				return nil, nil, nil, "", false, &InputError{File: m.Name, Line: r.Line, Field: "gpu_index",
					Msg: fmt.Sprintf("%d, but the %dx%d cluster has %d GPUs per node", r.GPUIndex, nodes, per, per)}
			}
			ids[i] = nd*per + r.GPUIndex
			if _, ok := first[ids[i]]; !ok {
				first[ids[i]] = r.Line
			}
		}
		total := nodes * per
		if len(first) < total {
			for g := range total {
				if _, ok := first[g]; !ok {
					return nil, nil, nil, "", false, &InputError{File: m.Name,
						Msg: fmt.Sprintf("GPU %d (node %d, gpu_index %d) has no run; a %dx%d cluster (from %s) needs every GPU measured", g, g/per, g%per, nodes, per, how)}
				}
			}
		}
		pos = make([]gpuPos, total)
		nodeID = make([]int, total)
		for g := range total {
			pos[g] = gpuPos{node: fmt.Sprint(g / per), index: g % per}
			nodeID[g] = g / per
		}
		return ids, pos, nodeID, fmt.Sprintf("integer nodes, %dx%d (from %s), GPU_ID = node x %d + gpu_index", nodes, per, how, per), false, nil
	}
	seen := map[gpuPos]bool{}
	for _, r := range m.Rows {
		seen[gpuPos{r.Node, r.GPUIndex}] = true
	}
	pos = make([]gpuPos, 0, len(seen))
	for p := range seen {
		pos = append(pos, p)
	}
	slices.SortFunc(pos, func(a, b gpuPos) int {
		if c := strings.Compare(a.node, b.node); c != 0 {
			return c
		}
		return a.index - b.index
	})
	at := make(map[gpuPos]int, len(pos))
	nodeID = make([]int, len(pos))
	rank := -1
	for g, p := range pos {
		at[p] = g
		if g == 0 || p.node != pos[g-1].node {
			rank++
		}
		nodeID[g] = rank
	}
	for i, r := range m.Rows {
		ids[i] = at[gpuPos{r.Node, r.GPUIndex}]
	}
	return ids, pos, nodeID, fmt.Sprintf("named nodes, %d nodes ranked by name, GPUs numbered node by node", rank+1), true, nil
}
