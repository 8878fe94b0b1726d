package sweep

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/experiment"
)

// Shard is one part of a grid: the points Partition deals to part Index
// of Count. The zero value is the whole grid.
type Shard struct {
	Index, Count int
}

// ParseShard reads "K/N": part K (counted from 0, as a Kubernetes
// Indexed Job's JOB_COMPLETION_INDEX is) of N.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("%q: want K/N, part K (0 to N-1) of N", s)
	}
	ki, err1 := strconv.Atoi(strings.TrimSpace(k))
	ni, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil || ni < 1 || ki < 0 || ki >= ni {
		return Shard{}, fmt.Errorf("%q: want K/N with N >= 1 and 0 <= K < N", s)
	}
	return Shard{Index: ki, Count: ni}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// whole says whether the shard is the entire grid.
func (s Shard) whole() bool { return s.Count <= 1 }

// Partition deals a grid's points to n parts so that each part's
// estimated run time (cost) is about equal: points in decreasing cost,
// ties in grid order, each to the part with the least cost so far (the
// lowest-numbered on a tie). It depends on nothing but the grid, so every
// shard of a sweep computes the same partition on its own. Each part's
// points are in grid order.
func Partition(g *Grid, pts []Point, n int) [][]Point {
	if n < 1 {
		n = 1
	}
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	costs := make([]float64, len(pts))
	for i, p := range pts {
		costs[i] = cost(g, p)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	load := make([]float64, n)
	owner := make([]int, len(pts))
	for _, i := range order {
		best := 0
		for k := 1; k < n; k++ {
			if load[k] < load[best] {
				best = k
			}
		}
		owner[i] = best
		load[best] += costs[i]
	}
	parts := make([][]Point, n)
	for i, p := range pts {
		parts[owner[i]] = append(parts[owner[i]], p)
	}
	return parts
}

// Points are the grid's points that its Shard runs, in grid order, with
// their indices in the whole grid.
func (g *Grid) Points() ([]Point, error) {
	pts, err := g.Expand()
	if err != nil || g.Shard.whole() {
		return pts, err
	}
	if g.Shard.Index < 0 || g.Shard.Index >= g.Shard.Count {
		return nil, fmt.Errorf("--shard %s: want 0 <= K < N", g.Shard)
	}
	return Partition(g, pts, g.Shard.Count)[g.Shard.Index], nil
}

// PartFormat names the format of a shard's output; Merge refuses others.
const PartFormat = "pal-sweep-part/1"

// Part is what one shard writes: the sweep's JSON document of its own
// rows, plus which part of which grid they are, so that Merge can check
// the parts belong together and cover the grid once.
type Part struct {
	Format string `json:"format"`
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	// Points is the size of the whole grid; Indices the grid indices of
	// this part's points.
	Points  int   `json:"points"`
	Indices []int `json:"indices"`
	// InputList is Inputs in order (the document's inputs map loses it),
	// for the table and CSV headers of the merged result.
	InputList []experiment.Input `json:"input_list"`
	Document
}

// NewPart describes a shard's result.
func NewPart(res *Result, shard Shard, indices []int, points int) Part {
	if shard.whole() {
		shard = Shard{0, 1}
	}
	return Part{Format: PartFormat, Shard: shard.Index, Shards: shard.Count, Points: points,
		Indices: indices, InputList: Inputs(res.Grid), Document: NewDocument(res)}
}

// WritePart writes a part as indented JSON.
func WritePart(w io.Writer, p Part) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// MaxPartBytes bounds what ReadPart reads: a part of a million-run grid
// is far smaller.
const MaxPartBytes = 512 << 20

// ReadPart decodes one part file; name is used in errors, which give the
// line and, where JSON says, the field.
func ReadPart(name string, r io.Reader) (Part, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPartBytes+1))
	if err != nil {
		return Part{}, fmt.Errorf("%s: %v", name, err)
	}
	if len(b) > MaxPartBytes {
		return Part{}, fmt.Errorf("%s: larger than %d MiB: not a sweep part", name, MaxPartBytes>>20)
	}
	var p Part
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Part{}, fmt.Errorf("%s: %s", name, jsonError(b, err))
	}
	if dec.More() {
		return Part{}, fmt.Errorf("%s: line %d: data after the part's JSON object", name, lineAt(b, dec.InputOffset()))
	}
	if p.Format != PartFormat {
		return Part{}, fmt.Errorf("%s: format %q: not a pal sweep part (want %q; write parts with pal sweep --shard)", name, p.Format, PartFormat)
	}
	switch {
	case p.Shards < 1 || p.Shard < 0 || p.Shard >= p.Shards:
		return Part{}, fmt.Errorf("%s: shard %d of %d: want 0 <= shard < shards", name, p.Shard, p.Shards)
	case p.Points < 0 || len(p.Indices) > p.Points:
		return Part{}, fmt.Errorf("%s: %d indices for a grid of %d points", name, len(p.Indices), p.Points)
	case p.Partial:
		return Part{}, fmt.Errorf("%s: shard %d/%d is partial (%d of %d runs finished): run it again", name, p.Shard, p.Shards, p.RunsDone, p.RunsTotal)
	case len(p.Rows) != len(p.Indices):
		return Part{}, fmt.Errorf("%s: %d rows for %d indices", name, len(p.Rows), len(p.Indices))
	}
	for i, r := range p.Rows {
		if r.Index != p.Indices[i] {
			return Part{}, fmt.Errorf("%s: row %d has index %d, indices say %d", name, i, r.Index, p.Indices[i])
		}
		if r.Index < 0 || r.Index >= p.Points || (i > 0 && r.Index <= p.Indices[i-1]) {
			return Part{}, fmt.Errorf("%s: row %d: index %d out of order or outside the grid's %d points", name, i, r.Index, p.Points)
		}
	}
	return p, nil
}

func jsonError(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("line %d: %v", lineAt(b, se.Offset), err)
	case errors.As(err, &te):
		return fmt.Sprintf("line %d: field %s: %v", lineAt(b, te.Offset), te.Field, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("line %d: the JSON ends early (a truncated part?)", lineAt(b, int64(len(b))))
	case errors.Is(err, io.EOF):
		return "empty file: not a sweep part"
	}
	return err.Error() // unknown field "x" names the field itself
}

func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// NamedPart is a part and the file it came from, for errors.
type NamedPart struct {
	Name string
	Part
}

// Merged is the sweep the parts make up: the document an unsharded run
// writes and its inputs in order.
type Merged struct {
	Document
	Inputs []experiment.Input
}

// Merge joins the parts of one sharded sweep into the result the
// unsharded sweep gives: every row once, in grid order, with the
// packed-sticky comparison recomputed across parts. Parts of different
// grids, a shard given twice, a missing shard and rows claimed by two
// parts are errors naming the files.
func Merge(parts []NamedPart) (*Merged, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("sweep merge: no part files given")
	}
	first := parts[0]
	byShard := map[int]string{}
	owner := map[int]string{}
	var rows []Row
	for _, p := range parts {
		if err := sameSweep(first, p); err != nil {
			return nil, err
		}
		if prev, dup := byShard[p.Shard]; dup {
			return nil, fmt.Errorf("%s and %s are both shard %d/%d", prev, p.Name, p.Shard, p.Shards)
		}
		byShard[p.Shard] = p.Name
		for _, r := range p.Rows {
			if prev, dup := owner[r.Index]; dup {
				return nil, fmt.Errorf("%s and %s both hold point %d: overlapping shards", prev, p.Name, r.Index)
			}
			owner[r.Index] = p.Name
			rows = append(rows, r)
		}
	}
	var missing []string
	for k := range first.Shards {
		if _, ok := byShard[k]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", k, first.Shards))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sweep merge: shard %s missing (have %d of %d part files)", strings.Join(missing, ", "), len(byShard), first.Shards)
	}
	if len(rows) != first.Points {
		for i := range first.Points {
			if _, ok := owner[i]; !ok {
				return nil, fmt.Errorf("sweep merge: every shard is given but no part holds point %d of %d: the parts were not cut by one pal version", i, first.Points)
			}
		}
	}
	slices.SortFunc(rows, func(a, b Row) int { return cmp.Compare(a.Index, b.Index) })
	for i := range rows {
		rows[i].VsPackedSticky, rows[i].VsPackedStickyPct = 0, 0
	}
	normalise(rows)
	m := &Merged{Document: first.Document, Inputs: first.InputList}
	m.Rows, m.Partial, m.RunsDone, m.RunsTotal = rows, false, len(rows), first.Points
	return m, nil
}

// sameSweep checks that p was cut from the grid first was, naming what
// differs.
func sameSweep(first, p NamedPart) error {
	diff := func(what string) error {
		return fmt.Errorf("%s and %s are parts of different sweeps: their %s differ", first.Name, p.Name, what)
	}
	switch {
	case p.Shards != first.Shards:
		return fmt.Errorf("%s is a part of %d, %s of %d: parts of different shardings", first.Name, first.Shards, p.Name, p.Shards)
	case p.Points != first.Points:
		return diff("grid sizes (" + strconv.Itoa(first.Points) + " and " + strconv.Itoa(p.Points) + " points)")
	case !reflect.DeepEqual(p.Grid, first.Grid):
		return diff("grids (traces, loads, penalties, seeds, schedulers or placements)")
	case !reflect.DeepEqual(p.InputList, first.InputList):
		return diff("inputs")
	}
	a, _ := json.Marshal(first.Base)
	b, _ := json.Marshal(p.Base)
	if !bytes.Equal(a, b) {
		return diff("base options")
	}
	return nil
}
