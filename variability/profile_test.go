package variability

import (
	"io/fs"
	"math"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/palsched/pal/data"
)

// The staged profiles as PROVENANCE.md §1a describes them: rows, distinct
// GPUs and the normalised minimum and maximum.
func TestReadProfileStagedFiles(t *testing.T) {
	tests := []struct {
		file            string
		rows, uuids     int
		minN, maxN      float64
		hasNode, hasCab bool
	}{
		{"variability/longhorn/resnet-longhorn-agg.csv", 1404, 336, 0.910, 3.569, true, true},
		{"variability/longhorn/bert-longhorn-agg.csv", 1096, 136, 0.965, 1.295, true, true},
		{"variability/longhorn/pagerank-longhorn-agg.csv", 880, 172, 0.969, 1.005, true, true},
		{"variability/longhorn/sgemm-longhorn-agg.csv", 11087, 392, 0.948, 1.212, true, true},
		{"variability/frontera/frontera-resnet-agg.csv", 1480, 296, 0.974, 1.154, true, true},
		{"variability/frontera/frontera-bert-agg.csv", 1656, 276, 0.988, 1.064, true, true},
		{"variability/frontera/frontera-pagerank-agg.csv", 1240, 248, 0.997, 1.001, true, true},
		{"variability/ls6/resnet-ls6-agg.csv", 219, 219, 0.949, 2.201, true, true},
	}
	for _, tc := range tests {
		t.Run(path.Base(tc.file), func(t *testing.T) {
			f, err := data.Variability.Open(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := ReadProfile(path.Base(tc.file), f)
			if err != nil {
				t.Fatal(err)
			}
			if p.Len() != tc.rows {
				t.Errorf("rows = %d, want %d", p.Len(), tc.rows)
			}
			if got := len(p.ByUUID()); got != tc.uuids {
				t.Errorf("distinct uuids = %d, want %d", got, tc.uuids)
			}
			n := p.Normalised()
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range n {
				lo, hi = min(lo, v), max(hi, v)
			}
			if math.Abs(lo-tc.minN) > 0.001 || math.Abs(hi-tc.maxN) > 0.001 {
				t.Errorf("normalised range [%.4f, %.4f], want [%.3f, %.3f]", lo, hi, tc.minN, tc.maxN)
			}
			if med := median(n); math.Abs(med-1) > 1e-12 {
				t.Errorf("median of normalised = %v, want 1", med)
			}
			if (p.Node != nil) != tc.hasNode || (p.Cabinet != nil) != tc.hasCab {
				t.Errorf("node/cabinet presence = %v/%v", p.Node != nil, p.Cabinet != nil)
			}
		})
	}
}

func TestProfileNormalisedAndByUUID(t *testing.T) {
	// perf median over 6 rows (1 2 3 3 5 6) = (3+3)/2 = 3.
	in := ",uuid,node,perf\n0,a,1,1\n1,a,1,2\n2,a,1,6\n3,b,2,3\n4,b,2,5\n5,c,3,3\n"
	p, err := ReadProfile("t.csv", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if p.Median() != 3 {
		t.Fatalf("median = %v, want 3", p.Median())
	}
	want := []float64{1.0 / 3, 2.0 / 3, 2, 1, 5.0 / 3, 1}
	got := p.Normalised()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
	got[0] = 99 // a copy: the profile must not change
	if p.Normalised()[0] == 99 {
		t.Error("Normalised returned the internal slice")
	}
	by := p.ByUUID()
	for u, w := range map[string]float64{"a": 2.0 / 3, "b": 4.0 / 3, "c": 1} {
		if math.Abs(by[u]-w) > 1e-12 {
			t.Errorf("uuid %s: %v, want %v", u, by[u], w)
		}
	}
	if p.Node[3] != "2" || p.Cabinet != nil {
		t.Errorf("node %v cabinet %v", p.Node, p.Cabinet)
	}
}

func TestReadProfileErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "t.csv: empty file"},
		{"header only", "uuid,perf\n", "t.csv: no data rows"},
		{"comments only", "# nothing\n", "t.csv: empty file"},
		{"missing perf", "uuid,perf_s\na,1\n", `t.csv:1: field "perf": missing column`},
		{"missing uuid", "perf\n1\n", `t.csv:1: field "uuid": missing column`},
		{"not a number", "uuid,perf\na,1\nb,abc\n", `t.csv:3: field "perf": "abc" is not a number`},
		{"nan", "uuid,perf\na,NaN\n", `t.csv:2: field "perf": "NaN" is not a finite number`},
		{"inf", "uuid,perf\na,+Inf\n", `t.csv:2: field "perf": "+Inf" is not a finite number`},
		{"overflow", "uuid,perf\na,1e999\n", `t.csv:2: field "perf": "1e999" is out of range`},
		{"zero", "uuid,perf\na,0\n", `t.csv:2: field "perf": "0" must be positive`},
		{"negative", "uuid,perf\na,-2\n", `t.csv:2: field "perf": "-2" must be positive`},
		{"empty uuid", "uuid,perf\n ,2\n", `t.csv:2: field "uuid": empty`},
		{"field count", "uuid,perf\na,1\nb\n", "t.csv:3: wrong number of fields"},
		{"duplicate column", "perf,uuid,PERF\n1,a,2\n", `t.csv:1: field "PERF": column appears twice`},
		{"bad quote", "uuid,perf\n\"a,1\n", "t.csv:2:"},
		{"line after comment", "uuid,perf\n# c\na,1\nb,x\n", `t.csv:4: field "perf": "x"`},
		{"too wide", "uuid,perf\na,1e-300\nb,1e300\nc,1e300\n", "too wide a range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ReadProfile("t.csv", strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("no error, got %d rows", p.Len())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestReadProfileBOMAndSpaces(t *testing.T) {
	p, err := ReadProfile("t.csv", strings.NewReader("\ufeffUUID , Perf\n a , 2 \nb,4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.UUID[0] != "a" || p.Perf[0] != 2 {
		t.Errorf("got %v %v", p.UUID, p.Perf)
	}
}

func readPinned(t testing.TB) *GPUScores {
	t.Helper()
	f, err := os.Open("../data/reference/pal-artifact-gpu-pmscores.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ReadGPUScores("pal-artifact-gpu-pmscores.csv", f)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestReadGPUScoresFiles(t *testing.T) {
	g := readPinned(t)
	if g.Table.NumGPUs() != 64 {
		t.Fatalf("GPUs = %d, want 64", g.Table.NumGPUs())
	}
	if g.Node[0] != 0 || g.Node[63] != 15 {
		t.Errorf("nodes %d..%d, want 0..15", g.Node[0], g.Node[63])
	}
	if v := g.Table.Values[ClassA][0]; v != 0.95338569253721761 {
		t.Errorf("GPU 0 class A = %v", v)
	}

	b, err := fs.ReadFile(data.Variability, "variability/32gpu-variability.csv")
	if err != nil {
		t.Fatal(err)
	}
	g, err = ReadGPUScores("32gpu-variability.csv", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if g.Table.NumGPUs() != 32 || g.Node[31] != 7 {
		t.Errorf("GPUs %d, last node %d; want 32 and 7", g.Table.NumGPUs(), g.Node[31])
	}
	if !strings.HasPrefix(g.UUID[0], "GPU-0f4b2b1e") {
		t.Errorf("uuid 0 = %q", g.UUID[0])
	}
	// B and C come from the same BERT profile on that testbed.
	for i := range 32 {
		if g.Table.Values[ClassB][i] != g.Table.Values[ClassC][i] {
			t.Fatalf("GPU %d: B %v != C %v", i, g.Table.Values[ClassB][i], g.Table.Values[ClassC][i])
		}
	}
}

func TestReadGPUScoresOrderAndErrors(t *testing.T) {
	const head = "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n"
	g, err := ReadGPUScores("s.csv", strings.NewReader(head+"1,0,2,2,2,2\n0,0,1,1,1,1\n2,1,3,3,3,3.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{1, 2, 3} {
		if g.Table.Values[ClassD][i] != w {
			t.Errorf("GPU %d = %v, want %v", i, g.Table.Values[ClassD][i], w)
		}
	}
	if g.Node[2] != 1 {
		t.Errorf("node of GPU 2 = %d", g.Node[2])
	}

	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "s.csv: empty file"},
		{"no rows", head, "s.csv: no data rows"},
		{"missing class", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC\n0,0,1,1,1\n", `s.csv:1: field "PerfVar_classD": missing column`},
		{"missing node", "GPU_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,1,1,1,1\n", `field "Node_ID": missing column`},
		{"duplicate id", head + "0,0,1,1,1,1\n0,0,1,1,1,1\n", `s.csv:3: field "GPU_ID": 0 repeats the id of line 2`},
		{"gap", head + "0,0,1,1,1,1\n2,0,1,1,1,1\n", `s.csv:3: field "GPU_ID": 2 out of range: 2 rows need ids 0..1`},
		{"huge id", head + "99999999999,0,1,1,1,1\n", `field "GPU_ID"`},
		{"negative id", head + "-1,0,1,1,1,1\n", `s.csv:2: field "GPU_ID": "-1" must not be negative`},
		{"fractional id", head + "0.5,0,1,1,1,1\n", `s.csv:2: field "GPU_ID": "0.5" is not an integer`},
		{"bad value", head + "0,0,1,x,1,1\n", `s.csv:2: field "PerfVar_classB": "x" is not a number`},
		{"zero value", head + "0,0,1,1,0,1\n", `s.csv:2: field "PerfVar_classC": "0" must be positive`},
		{"bad node", head + "0,n1,1,1,1,1\n", `s.csv:2: field "Node_ID": "n1" is not an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadGPUScores("s.csv", strings.NewReader(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func FuzzReadProfile(f *testing.F) {
	for _, s := range []string{
		"uuid,perf\na,1\nb,2\n",
		",exp,perf,uuid\n0,x,1.5,u1\n1,x,1.25,u1\n",
		"cabinet,device,model,node,perf_avg,perf,run,uuid\nc1,1,p,41,1,2585983424,4,GPU-1\n",
		"uuid,perf\na,NaN\n",
		"uuid,perf\n\"a\nb\",3\n",
		"# comment\nuuid,perf\na,1e-300\nb,1e300\n",
		"perf,uuid\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadProfile("f.csv", strings.NewReader(in))
		if err != nil {
			if p != nil {
				t.Fatal("profile and error")
			}
			if !strings.HasPrefix(err.Error(), "f.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error does not name the file, or is over 1 KiB: %.300v", err)
			}
			return
		}
		if p.Len() == 0 || len(p.UUID) != p.Len() || len(p.Normalised()) != p.Len() {
			t.Fatalf("inconsistent profile: %d perf, %d uuid", p.Len(), len(p.UUID))
		}
		if m := p.Median(); !(m > 0) || math.IsInf(m, 0) {
			t.Fatalf("median %v", m)
		}
		for i, v := range p.Normalised() {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("row %d normalised to %v", i, v)
			}
		}
		for u, v := range p.ByUUID() {
			if u == "" || !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("uuid %q median %v", u, v)
			}
		}
	})
}

func FuzzReadGPUScores(f *testing.F) {
	const head = "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n"
	for _, s := range []string{
		head + "0,0,1,1,1,1\n1,0,2,2,2,2\n",
		head + "1,0,2,2,2,2\n0,0,1,1,1,1\n",
		",GPU_ID,GPU_UUID,Local_GPU_ID,Node_ID,IP_addr,IN_USE,JOB_IDS,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,GPU-x,0,0,1.2.3.4,False,,1.01,1.05,1.05,1.0\n",
		head + "0,0,1,1,1,1\n0,0,1,1,1,1\n",
		head + "5,0,1,1,1,1\n",
		head + "3.0,0,1,1,1,1\n",
		head,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g, err := ReadGPUScores("g.csv", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "g.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error does not name the file, or is over 1 KiB: %.300v", err)
			}
			return
		}
		n := g.Table.NumGPUs()
		if n == 0 || len(g.Node) != n || len(g.UUID) != n {
			t.Fatalf("inconsistent: %d GPUs, %d nodes, %d uuids", n, len(g.Node), len(g.UUID))
		}
		for c := range g.Table.Values {
			if len(g.Table.Values[c]) != n {
				t.Fatalf("class %d has %d values", c, len(g.Table.Values[c]))
			}
			for i, v := range g.Table.Values[c] {
				if !(v > 0) || math.IsInf(v, 0) {
					t.Fatalf("class %d GPU %d = %v", c, i, v)
				}
			}
		}
		for i, nd := range g.Node {
			if nd < 0 {
				t.Fatalf("GPU %d node %d", i, nd)
			}
		}
	})
}

// Locate on hand-built tables: integer nodes 0 and 1 of two GPUs each
// (ids 0-3), one of them with a UUID.
func TestGPUScoresLocate(t *testing.T) {
	ints := &GPUScores{Node: []int{0, 0, 1, 1}, UUID: []string{"", "", "GPU-x", ""}}
	named := &GPUScores{Node: []int{0, 0, 1, 1}, UUID: make([]string, 4), NodeName: []string{"a", "a", "b", "b"}, Index: []int{0, 1, 0, 1}}
	for _, tc := range []struct {
		name  string
		s     *GPUScores
		uuid  string
		node  string
		index int
		want  int
		how   string
	}{
		{"node number", ints, "", "1", 1, 3, "node number and index"},
		{"uuid wins", ints, "GPU-x", "0", 0, 2, "uuid"},
		{"unknown uuid, node number", ints, "GPU-y", "0", 1, 1, "node number and index"},
		{"index past the node", ints, "", "1", 2, -1, ""},
		{"named node on an integer table", ints, "", "b", 0, -1, ""},
		{"name and index", named, "", "b", 1, 3, "node_name and gpu_index"},
		{"a number is not a name", named, "", "1", 1, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, how, ok := tc.s.Locate(tc.uuid, tc.node, tc.index)
			if g != tc.want || how != tc.how || ok != (tc.want >= 0) {
				t.Errorf("Locate(%q, %q, %d) = %d, %q, %v; want %d, %q", tc.uuid, tc.node, tc.index, g, how, ok, tc.want, tc.how)
			}
		})
	}
}
