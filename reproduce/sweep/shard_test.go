package sweep

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/1": {0, 1}, "2/3": {2, 3}, " 1 / 4 ": {1, 4}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1", "3/3", "-1/2", "0/0", "a/2", "1/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

// The parts of a partition hold every point once, in grid order, with
// costs balanced the greedy way; the same grid always cuts the same way.
func TestPartition(t *testing.T) {
	g := &Grid{
		Base:       artifactBase(t),
		Traces:     []string{"sia-philly/1"},
		Localities: []float64{1, 2, 3},
		Schedulers: []string{"fifo"},
		Placements: []string{"pal", "tiresias", "random-nonsticky"},
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// Costs: L x (3 pal, 1 packed-sticky, 8 random-nonsticky), so
	// per L: 3L, L, 8L for indices 3(L-1) .. 3(L-1)+2.
	parts := Partition(g, pts, 3)
	var got [][]int
	for _, p := range parts {
		var idx []int
		for i, pt := range p {
			if i > 0 && pt.Index <= p[i-1].Index {
				t.Errorf("part not in grid order: %v", p)
			}
			idx = append(idx, pt.Index)
		}
		got = append(got, idx)
	}
	// Decreasing cost (index:cost): 8:24 5:16 6:9 2:8 3:6 0:3 7:3 4:2 1:1.
	// Each to the least-loaded part: 8->p0 (24), 5->p1 (16), 6->p2 (9),
	// 2->p2 (17), 3->p1 (22), 0->p2 (20), 7->p2 (23), 4->p1 (24), 1->p2 (24).
	want := [][]int{{8}, {3, 4, 5}, {0, 1, 2, 6, 7}}
	if len(got) != 3 || !equalInts(got, want) {
		t.Errorf("partition %v, want %v", got, want)
	}
	for n := 1; n <= 10; n++ {
		seen := map[int]int{}
		for _, p := range Partition(g, pts, n) {
			for _, pt := range p {
				seen[pt.Index]++
			}
		}
		if len(seen) != len(pts) {
			t.Errorf("n=%d: %d of %d points in some part", n, len(seen), len(pts))
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("n=%d: point %d in %d parts", n, i, c)
			}
		}
	}
	g.Shard = Shard{1, 3}
	if p, err := g.Points(); err != nil || len(p) != 3 || p[0].Index != 3 {
		t.Errorf("Points of shard 1/3: %v, %v", p, err)
	}
}

func equalInts(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

const seedPart = `{
  "format": "pal-sweep-part/1",
  "shard": 0,
  "shards": 2,
  "points": 2,
  "indices": [1],
  "input_list": [{"name": "preset", "value": "artifact"}],
  "inputs": {"preset": "artifact"},
  "partial": false,
  "runs_done": 1,
  "runs_total": 1,
  "base": {},
  "grid": {"traces": ["t"], "schedulers": ["fifo"], "placements": ["pal"]},
  "rows": [{"index": 1, "trace": "t", "placement": "pal", "avg_jct_s": 10}]
}
`

func TestReadPartErrors(t *testing.T) {
	if p, err := ReadPart("ok.json", strings.NewReader(seedPart)); err != nil || p.Rows[0].Index != 1 || p.Shards != 2 {
		t.Fatalf("seed part: %+v, %v", p, err)
	}
	for name, c := range map[string]struct{ edit, want string }{
		"format":  {`"format": "x"`, `bad.json: format "x": not a pal sweep part`},
		"shard":   {`"shard": 5`, "bad.json: shard 5 of 2"},
		"unknown": {`"shards": 2, "colour": 1`, `unknown field "colour"`},
		"index":   {`"indices": [0]`, "bad.json: row 0 has index 1, indices say 0"},
		"range":   {`"points": 1`, "bad.json: row 0: index 1 out of order or outside the grid's 1 points"},
		"type":    {`"points": "2"`, "bad.json: line 5: field points"},
		"partial": {`"partial": true`, "bad.json: shard 0/2 is partial"},
	} {
		in := seedPart
		switch name {
		case "format":
			in = strings.Replace(in, `"format": "pal-sweep-part/1"`, c.edit, 1)
		case "shard":
			in = strings.Replace(in, `"shard": 0`, c.edit, 1)
		case "unknown":
			in = strings.Replace(in, `"shards": 2`, c.edit, 1)
		case "index":
			in = strings.Replace(in, `"indices": [1]`, c.edit, 1)
		case "range", "type":
			in = strings.Replace(in, `"points": 2`, c.edit, 1)
		case "partial":
			in = strings.Replace(in, `"partial": false`, c.edit, 1)
		}
		if _, err := ReadPart("bad.json", strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := ReadPart("empty.json", strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "empty.json: empty file") {
		t.Errorf("empty: %v", err)
	}
	if _, err := ReadPart("two.json", strings.NewReader(seedPart+seedPart)); err == nil || !strings.Contains(err.Error(), "two.json: line 16: data after") {
		t.Errorf("two objects: %v", err)
	}
}

// ReadPart returns a part or an error naming the file, never panics, and
// a part it accepts merges on its own (with its missing shards named).
func FuzzReadPart(f *testing.F) {
	f.Add([]byte(seedPart))
	f.Add([]byte(strings.Replace(seedPart, `"shards": 2`, `"shards": 1`, 1)))
	f.Add([]byte(`{"format": "pal-sweep-part/1", "shards": 1, "points": 0, "indices": [], "rows": []}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ReadPart("f.json", bytes.NewReader(b))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json: ") || len(err.Error()) > 2048 {
				t.Fatalf("error does not name the file, or is over 2 KiB: %.300v", err)
			}
			return
		}
		if _, err := Merge([]NamedPart{{Name: "f.json", Part: p}}); err != nil && p.Shards == 1 && len(p.Rows) == p.Points {
			t.Fatalf("a whole one-shard part did not merge: %v", err)
		}
	})
}
