package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/workload"
)

func artifactBase(t *testing.T) experiment.Options {
	t.Helper()
	o, err := experiment.Preset("artifact")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestExpandOrder(t *testing.T) {
	g := &Grid{
		Base:       artifactBase(t),
		Traces:     []string{"sia-philly/2", "sia-philly/1"},
		Localities: []float64{1, 2},
		Schedulers: []string{"fifo", "LAS"},
		Placements: []string{"pal", "tiresias"},
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 16 {
		t.Fatalf("got %d points, want 2 traces x 2 L x 2 schedulers x 2 placements = 16", len(pts))
	}
	var got []string
	for i, p := range pts {
		if p.Index != i {
			t.Errorf("point %d has index %d", i, p.Index)
		}
		if p.Load != 2 || p.Seed != 42 {
			t.Errorf("point %d: load %v seed %v, want the preset's 2 and 42", i, p.Load, p.Seed)
		}
		got = append(got, fmt.Sprintf("%s/%g/%s/%s", p.Trace[len(p.Trace)-1:], p.LocalityPenalty, p.Scheduler, p.Placement))
	}
	want := []string{
		"2/1/fifo/pal", "2/1/fifo/packed-sticky", "2/1/las/pal", "2/1/las/packed-sticky",
		"2/2/fifo/pal", "2/2/fifo/packed-sticky", "2/2/las/pal", "2/2/las/packed-sticky",
		"1/1/fifo/pal", "1/1/fifo/packed-sticky", "1/1/las/pal", "1/1/las/packed-sticky",
		"1/2/fifo/pal", "1/2/fifo/packed-sticky", "1/2/las/pal", "1/2/las/packed-sticky",
	}
	if !slices.Equal(got, want) {
		t.Errorf("grid order:\n got %v\nwant %v", got, want)
	}
}

func TestExpandErrors(t *testing.T) {
	base := artifactBase(t)
	cases := map[string]*Grid{
		"unknown placement": {Base: base, Traces: []string{"sia-philly/1"}, Schedulers: []string{"fifo"}, Placements: []string{"best"}},
		"unknown scheduler": {Base: base, Traces: []string{"sia-philly/1"}, Schedulers: []string{"edf"}, Placements: []string{"pal"}},
		"no trace":          {Base: base, Schedulers: []string{"fifo"}, Placements: []string{"pal"}},
		"penalty below 1":   {Base: base, Traces: []string{"sia-philly/1"}, Schedulers: []string{"fifo"}, Placements: []string{"pal"}, Localities: []float64{0.5}},
		"synergy at load 0": {Base: base, Traces: []string{SynergyTrace}, Schedulers: []string{"fifo"}, Placements: []string{"pal"}, Loads: []float64{0}},
		"track past the end": {Base: base, Traces: []string{SynergyTrace}, Schedulers: []string{"fifo"}, Placements: []string{"pal"},
			Synergy: SynergySpec{Jobs: 100, Track: &workload.TrackRange{First: 100, Last: 200}}},
	}
	for name, g := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := g.Expand(); err == nil {
				t.Error("Expand accepted the grid")
			}
		})
	}
}

func TestSynergyDefaults(t *testing.T) {
	if got := (SynergySpec{}).TrackRange(); got != (workload.TrackRange{First: 2000, Last: 3000}) {
		t.Errorf("default track %v, want the paper's 2000-3000", got)
	}
	g := &Grid{Base: artifactBase(t), Traces: []string{SynergyTrace, "sia-philly/1"}, Schedulers: []string{"fifo"}, Placements: []string{"pal"}}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var loads []float64
	for _, p := range pts {
		loads = append(loads, p.Load)
	}
	if want := []float64{8, 10, 12, 14, 2}; !slices.Equal(loads, want) {
		t.Errorf("loads %v, want synergy's default %v then the preset's extra load", loads, want)
	}
}

func tinyGrid(t *testing.T) *Grid {
	return &Grid{
		Base:       artifactBase(t),
		Traces:     []string{"sia-philly/1"},
		Localities: []float64{1.0, 1.7},
		Schedulers: []string{"fifo"},
		Placements: []string{"pal", "packed-sticky", "random-nonsticky"},
	}
}

func csvOf(t *testing.T, res *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := Table("", res.Rows).WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Two sweeps of the same grid, one on a single worker and one on four,
// must write the same CSV: rows are laid out in grid order whatever order
// runs finish in, and every run is deterministic.
func TestDeterministic(t *testing.T) {
	var out []string
	for _, w := range []int{1, 4} {
		res, err := Run(context.Background(), []*Grid{tinyGrid(t)}, RunOptions{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Partial || len(res[0].Rows) != 6 {
			t.Fatalf("workers %d: %d of %d rows, partial %v", w, len(res[0].Rows), res[0].Total, res[0].Partial)
		}
		for i, r := range res[0].Rows {
			if r.Index != i {
				t.Errorf("row %d has index %d", i, r.Index)
			}
			if r.Placement == "packed-sticky" && r.VsPackedSticky != 1 {
				t.Errorf("packed-sticky normalised to %v, want 1", r.VsPackedSticky)
			}
		}
		out = append(out, csvOf(t, res[0]))
	}
	if out[0] != out[1] {
		t.Errorf("CSV differs between runs:\n%s\n---\n%s", out[0], out[1])
	}
	if !strings.HasPrefix(out[0], "index,trace,load_jobs_per_hour,") {
		t.Errorf("CSV header: %q", strings.SplitN(out[0], "\n", 2)[0])
	}
}

// Cancelling mid-sweep keeps the finished runs, in grid order, and marks
// the result partial; WriteDir then leaves a PARTIAL note.
func TestCancelKeepsFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := tinyGrid(t)
	g.Localities = []float64{1.0, 1.5, 2.0, 2.5, 3.0}
	res, err := Run(ctx, []*Grid{g}, RunOptions{Workers: 2, Progress: func(done, total int) {
		if done == 2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	r := res[0]
	if !r.Partial || len(r.Rows) < 2 || len(r.Rows) >= r.Total {
		t.Fatalf("%d of %d rows, partial %v: want the finished runs only", len(r.Rows), r.Total, r.Partial)
	}
	for i := 1; i < len(r.Rows); i++ {
		if r.Rows[i].Index <= r.Rows[i-1].Index {
			t.Errorf("rows out of grid order: %d after %d", r.Rows[i].Index, r.Rows[i-1].Index)
		}
	}
	for _, row := range r.Rows {
		if row.Jobs != 160 || !(row.AvgJCT > 0) {
			t.Errorf("row %d is not a finished run: %+v", row.Index, row.Summary)
		}
	}
	dir := t.TempDir()
	if err := WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.csv", "sweep.json", PartialFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if !bytes.Contains(b, []byte(`"partial": true`)) {
		t.Error("sweep.json does not say partial")
	}
	// A complete result written to the same directory clears the note.
	r.Partial = false
	if err := WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PartialFile)); !os.IsNotExist(err) {
		t.Errorf("stale %s left behind: %v", PartialFile, err)
	}
}

// A point asked for by two grids is simulated once and reported in both;
// the synergy trace is generated per load and tracked as asked.
func TestSharedRunsAndSynergy(t *testing.T) {
	base := artifactBase(t)
	base.Pinned = false
	syn := SynergySpec{Jobs: 120, Track: &workload.TrackRange{First: 40, Last: 79}}
	a := &Grid{Base: base, Traces: []string{SynergyTrace}, Loads: []float64{6, 12}, Schedulers: []string{"fifo"},
		Placements: []string{"packed-sticky", "pal"}, Synergy: syn, Keep: func(p Point) bool { return p.Placement == "pal" }}
	b := &Grid{Base: base, Traces: []string{SynergyTrace}, Loads: []float64{12}, Schedulers: []string{"fifo"},
		Placements: []string{"pal"}, Synergy: syn}
	res, err := Run(context.Background(), []*Grid{a, b}, RunOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := res[0], res[1]
	if len(ra.Rows) != 4 || len(rb.Rows) != 1 {
		t.Fatalf("rows %d and %d, want 4 and 1", len(ra.Rows), len(rb.Rows))
	}
	twin, ok := ra.Find(SynergyTrace, 12, base.LocalityPenalty, base.Seed, "fifo", "pal")
	if !ok {
		t.Fatal("grid a has no load-12 PAL row")
	}
	if got := rb.Rows[0]; got.WallMS != twin.WallMS || got.AvgJCT != twin.AvgJCT || got.Index != 0 {
		t.Errorf("shared run: b's row %+v differs from a's %+v (or kept a's index)", got.Point, twin.Point)
	}
	if twin.Run == nil || len(twin.Run.RoundStats) == 0 {
		t.Error("Keep asked for PAL's details, none kept")
	}
	if ps, _ := ra.Find(SynergyTrace, 12, base.LocalityPenalty, base.Seed, "fifo", "packed-sticky"); ps.Run != nil {
		t.Error("details kept for a point Keep did not ask for")
	}
	for _, r := range ra.Rows {
		if r.Jobs != 40 {
			t.Errorf("load %v %s: %d tracked jobs, want 40 (ids 40-79)", r.Load, r.Placement, r.Jobs)
		}
		if r.MultiGPUJobs == 0 || r.MultiGPUJobs >= r.Jobs || !(r.MultiGPUAvgJCT > 0) {
			t.Errorf("load %v %s: multi-GPU %d jobs, avg %v", r.Load, r.Placement, r.MultiGPUJobs, r.MultiGPUAvgJCT)
		}
	}
	// Arrivals scale with 1/load: the same jobs come twice as fast at 12.
	lastArrival := func(load float64) float64 {
		r, _ := ra.Find(SynergyTrace, load, base.LocalityPenalty, base.Seed, "fifo", "pal")
		a := 0.0
		for _, j := range r.Run.JobRecords {
			if j.ID == 79 {
				a = j.Arrival
			}
		}
		return a
	}
	if lo, hi := lastArrival(6), lastArrival(12); !(lo > 1.8*hi && hi > 0) {
		t.Errorf("job 79 arrives at %v s at 6 jobs/h and %v s at 12: arrivals did not follow the load", lo, hi)
	}
}

func TestExpandTraces(t *testing.T) {
	got := ExpandTraces([]string{"sia-philly/all", " synergy ", ""})
	if len(got) != 9 || got[0] != "sia-philly/1" || got[7] != "sia-philly/8" || got[8] != "synergy" {
		t.Errorf("ExpandTraces = %v", got)
	}
}
