package variability

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Profile is one application's variability measurements on one real
// cluster: one row per (GPU, repetition) run. Only the columns PAL needs are
// kept; the staged files disagree on everything else.
type Profile struct {
	// Name is where the rows came from (a file name), used in errors.
	Name string
	// Perf is the time-like measurement of each row (larger = slower).
	Perf []float64
	// UUID identifies the physical GPU of each row; repeated runs share it.
	UUID []string
	// Node and Cabinet are the row's location when the file has them
	// (nil otherwise). Kept as text: the files spell nodes "004", "42", "-1".
	Node    []string
	Cabinet []string

	median float64
	norm   []float64
}

// ReadProfile reads a profiling CSV. Any column layout is accepted as long
// as it has "perf" and "uuid"; rows are normalised by the file's median perf
// so that 1.0 is the median run, which is the scale PM-scores live on.
func ReadProfile(name string, r io.Reader) (*Profile, error) {
	// A profile is a measurement tool's own dump: its other columns
	// (timestamps, clocks, kernel counts) differ from tool to tool and
	// mean nothing here, so any column is accepted.
	t, err := openCSV(name, r, nil)
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("perf", "uuid")
	if err != nil {
		return nil, err
	}
	perfCol, uuidCol := cols[0], cols[1]
	nodeCol, cabCol := t.OptCol("node"), t.OptCol("cabinet")
	p := &Profile{Name: name}
	for t.Next() {
		v, err := t.Positive(perfCol)
		if err != nil {
			return nil, err
		}
		u := t.Text(uuidCol)
		if u == "" {
			return nil, t.Errorf(uuidCol, "empty")
		}
		p.Perf = append(p.Perf, v)
		p.UUID = append(p.UUID, u)
		if nodeCol >= 0 {
			p.Node = append(p.Node, t.Text(nodeCol))
		}
		if cabCol >= 0 {
			p.Cabinet = append(p.Cabinet, t.Text(cabCol))
		}
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(p.Perf) == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	if err := p.normalise(); err != nil {
		return nil, err
	}
	return p, nil
}

// normalise divides by the median row, matching the artifact's
// perf/median(perf) over the whole file.
func (p *Profile) normalise() error {
	p.median = median(p.Perf)
	p.norm = make([]float64, len(p.Perf))
	for i, v := range p.Perf {
		n := v / p.median
		if n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) {
			return &InputError{File: p.Name, Field: "perf", Msg: fmt.Sprintf("values span too wide a range to normalise (%g / median %g)", v, p.median)}
		}
		p.norm[i] = n
	}
	return nil
}

// Len is the number of rows.
func (p *Profile) Len() int { return len(p.Perf) }

// Median is the divisor used for normalisation.
func (p *Profile) Median() float64 { return p.median }

// Normalised gives perf/median per row, in file order. The slice is a
// copy so that profiles can be shared between classes and callers.
func (p *Profile) Normalised() []float64 { return slices.Clone(p.norm) }

// ByUUID gives each physical GPU's median normalised value: the PM-score a
// real cluster would assign to that GPU (the artifact's groupby-median).
func (p *Profile) ByUUID() map[string]float64 {
	groups := map[string][]float64{}
	for i, u := range p.UUID {
		groups[u] = append(groups[u], p.norm[i])
	}
	out := make(map[string]float64, len(groups))
	for u, vs := range groups {
		out[u] = median(vs)
	}
	return out
}

// median is pandas' median: the mean of the two middle values for an even
// count. It sorts a copy; NaN-free input is assumed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedMedian(s)
}

func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	// Halve before adding so two huge values cannot overflow.
	return s[n/2-1]/2 + s[n/2]/2
}

// GPUScores is a pinned per-GPU table: the raw PM values a run should use
// instead of drawing them, as the artifact's gpu_df dump or a real testbed
// provides.
type GPUScores struct {
	Table *Table
	// Node is each GPU's node id.
	Node []int
	// UUID is each GPU's physical id when the file has one ("" otherwise).
	UUID []string
	// Line is the line each GPU's row is on, for errors found later.
	Line []int
	// NodeName and Index place each GPU on a Kubernetes node when the
	// file has node_name and gpu_index columns (as pal profile build
	// writes them); nil otherwise.
	NodeName []string
	Index    []int
}

// ReadGPUScoresFile is ReadGPUScores of the file at path, named by it.
func ReadGPUScoresFile(path string) (*GPUScores, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadGPUScores(path, f)
}

// ReadGPUScores reads columns GPU_ID, Node_ID and PerfVar_classA..D (plus
// an optional GPU_UUID). Rows may come in any order, but the ids must be
// exactly 0..N-1 so that a table can be indexed by GPU id without holes.
func ReadGPUScores(name string, r io.Reader) (*GPUScores, error) {
	names := []string{"GPU_ID", "Node_ID"}
	for c := range Class(NumClasses) {
		names = append(names, "PerfVar_class"+c.String())
	}
	// GPU_UUID or uuid is optional; the artifact's GPU table dump also
	// carries Local_GPU_ID, IP_addr, IN_USE and JOB_IDS, which are unused.
	known := append(append([]string(nil), names...), "GPU_UUID", "uuid", "Local_GPU_ID", "IP_addr", "IN_USE", "JOB_IDS", "node_name", "gpu_index")
	t, err := openCSV(name, r, known)
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols(names...)
	if err != nil {
		return nil, err
	}
	idCol, nodeCol, classCols := cols[0], cols[1], cols[2:]
	uuidCol := t.OptCol("GPU_UUID", "uuid")
	nameCol, indexCol := t.OptCol("node_name"), t.OptCol("gpu_index")
	if (nameCol < 0) != (indexCol < 0) {
		return nil, &InputError{File: name, Line: 1, Msg: "node_name and gpu_index come together (one places a GPU only with the other)"}
	}

	type row struct {
		id, node, line int
		index          int
		uuid, nodeName string
		v              [NumClasses]float64
	}
	var rows []row
	for t.Next() {
		var rw row
		if rw.id, err = t.Int(idCol); err != nil {
			return nil, err
		}
		rw.line = t.FieldLine(idCol)
		if rw.node, err = t.Int(nodeCol); err != nil {
			return nil, err
		}
		for c := range Class(NumClasses) {
			if rw.v[c], err = score(t, classCols[c]); err != nil {
				return nil, err
			}
		}
		if uuidCol >= 0 {
			rw.uuid = t.Text(uuidCol)
		}
		if nameCol >= 0 {
			if rw.nodeName = t.Text(nameCol); rw.nodeName == "" {
				return nil, t.Errorf(nameCol, "empty (want the GPU's Kubernetes node)")
			}
			if rw.index, err = t.Int(indexCol); err != nil {
				return nil, err
			}
		}
		rows = append(rows, rw)
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	n := len(rows)
	if n == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	// Check ids before allocating by them: a stray huge id must not size
	// the table.
	seenAt := make([]int, n)
	for _, rw := range rows {
		if rw.id >= n {
			return nil, &InputError{File: name, Line: rw.line, Field: t.FieldName(idCol),
				Msg: fmt.Sprintf("%d out of range: %d rows need ids 0..%d", rw.id, n, n-1)}
		}
		if prev := seenAt[rw.id]; prev != 0 {
			return nil, &InputError{File: name, Line: rw.line, Field: t.FieldName(idCol),
				Msg: fmt.Sprintf("%d repeats the id of line %d", rw.id, prev)}
		}
		seenAt[rw.id] = rw.line
	}
	s := &GPUScores{Table: &Table{}, Node: make([]int, n), UUID: make([]string, n), Line: make([]int, n)}
	if nameCol >= 0 {
		s.NodeName, s.Index = make([]string, n), make([]int, n)
	}
	for c := range s.Table.Values {
		s.Table.Values[c] = make([]float64, n)
	}
	for _, rw := range rows {
		s.Node[rw.id] = rw.node
		s.UUID[rw.id] = rw.uuid
		s.Line[rw.id] = rw.line
		if s.NodeName != nil {
			s.NodeName[rw.id], s.Index[rw.id] = rw.nodeName, rw.index
		}
		for c := range rw.v {
			s.Table.Values[c][rw.id] = rw.v[c]
		}
	}
	return s, nil
}

// WriteGPUScores writes s in the format ReadGPUScores reads, every value
// at full precision so that a read-back table is the same table. Each
// line of comments is written first as a '#' line (where the table came
// from). GPU_UUID is written when any GPU has one, node_name and
// gpu_index when s places its GPUs on named nodes.
func WriteGPUScores(w io.Writer, s *GPUScores, comments []string) error {
	for _, c := range comments {
		for _, l := range strings.Split(c, "\n") {
			if _, err := fmt.Fprintf(w, "# %s\n", l); err != nil {
				return err
			}
		}
	}
	hasUUID := slices.ContainsFunc(s.UUID, func(u string) bool { return u != "" })
	cw := csv.NewWriter(w)
	head := []string{"GPU_ID", "Node_ID"}
	for c := range Class(NumClasses) {
		head = append(head, "PerfVar_class"+c.String())
	}
	if hasUUID {
		head = append(head, "GPU_UUID")
	}
	if s.NodeName != nil {
		head = append(head, "node_name", "gpu_index")
	}
	cw.Write(head)
	for g := range s.Table.NumGPUs() {
		rec := []string{strconv.Itoa(g), strconv.Itoa(s.Node[g])}
		for c := range Class(NumClasses) {
			rec = append(rec, strconv.FormatFloat(s.Table.Values[c][g], 'g', -1, 64))
		}
		if hasUUID {
			rec = append(rec, s.UUID[g])
		}
		if s.NodeName != nil {
			rec = append(rec, s.NodeName[g], strconv.Itoa(s.Index[g]))
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// Locate finds the GPU of the table that a node's report names (GPU
// telemetry names a GPU by its UUID, its node and its index on the node)
// and says how it matched. A UUID the table has wins; then the node name
// and index, where the table has node_name and gpu_index columns (as pal
// profile build writes them for named nodes); then, for a table whose
// nodes are the simulator's integers, node number and the index-th GPU of
// that node in GPU_ID order. ok is false when nothing matches.
func (s *GPUScores) Locate(uuid, node string, index int) (gpu int, how string, ok bool) {
	if uuid != "" {
		for g, u := range s.UUID {
			if u == uuid {
				return g, "uuid", true
			}
		}
	}
	if s.NodeName != nil {
		for g, n := range s.NodeName {
			if n == node && s.Index[g] == index {
				return g, "node_name and gpu_index", true
			}
		}
		return -1, "", false
	}
	nd, isInt := intNode(node)
	if !isInt || index < 0 {
		return -1, "", false
	}
	k := 0
	for g, n := range s.Node {
		if n != nd {
			continue
		}
		if k == index {
			return g, "node number and index", true
		}
		k++
	}
	return -1, "", false
}
