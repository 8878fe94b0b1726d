package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/palsched/pal/internal/csvin"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// streamedRows reads every row of a streamed trace through Each.
func streamedRows(t *testing.T, tr *Trace) []Spec {
	t.Helper()
	var out []Spec
	if err := tr.Each(func(s *Spec) error { out = append(out, *s); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A streamed trace refuses what a trace read whole refuses, with the
// same message word for word: file, line, field, and for a duplicate id
// the line of its first use, which the streamed reader no longer holds
// and reads again.
func TestStreamTraceFileErrorsAsWhole(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model\n"
	big := "1099511627776"
	for _, in := range []string{
		"",
		"job_id,num_gpus,submit_time,model\n",
		h + "0,1,0,10,resnet50\n1,x,5,10,BERT\n",
		h + "0,1,-3,10,resnet50\n",
		h + "0,1,0,NaN,resnet50\n",
		h + "0,1,0,10,alexnet\n",
		h + "0,1,0,10\n",
		h + "0,1,0,10,BERT\n0,1,0,10,BERT\n",
		h + "0,1,0,1,BERT\n7,1,0,1,BERT\n3,1,0,1,BERT\n7,1,0,1,BERT\n",
		h + "5,1,0,1,BERT\n" + big + ",1,0,1,BERT\n6,1,0,1,BERT\n5,1,0,1,BERT\n",
		h + "9,1,20,1,BERT\n4,1,0,1,BERT\n9,1,0,1,BERT\n", // unsorted, duplicate
		h,
		h + "0,1,0,10,\"BERT\n",
		h + "0,1,0,100,vgg19\n1,1,5,100,vgg19,7\n",
		"job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,1,BERT,yes\n",
		"job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,1,BERT,0\n",
		"job_id,num_gpus,submit_time,duration_s,app,vc\n0,1,0,1,a,x\n1,1,0,1,a,y\n",
	} {
		p := writeFile(t, "w.csv", in)
		_, want := ReadTraceFile(p, DefaultModels())
		_, got := StreamTraceFile(p, DefaultModels())
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%q:\n got %v\nwant %v", in, got, want)
		}
	}
}

// Streamed, a trace's rows come back one by one exactly as ReadTraceFile
// holds them, with its counts; rows out of submit order are read whole.
func TestStreamTraceFileRows(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model,tracked,app,vc,pod_gpus,max_gpus\n"
	sorted := h + "3,8,0,10,resnet50,1,a,x,4,\n1,2,0,5,BERT,0,,y,,\n\n7,16,5.5,20,GPT2,1,a,x,,\n2,1,5.5,1,vgg19,1,b,,,4\n"
	for _, tc := range []struct {
		name, in string
		streamed bool
	}{
		{"sorted", sorted, true},
		{"unsorted", h + "3,8,9,10,resnet50,1,a,x,4,\n1,2,0,5,BERT,0,,y,,\n", false},
	} {
		p := writeFile(t, "r.csv", tc.in)
		want, err := ReadTraceFile(p, DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		got, err := StreamTraceFile(p, DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		if got.Streamed() != tc.streamed || got.Name != want.Name || got.HasTracked != want.HasTracked || got.HasApp != want.HasApp {
			t.Fatalf("%s: streamed %v, %q %v %v; want %v, %q %v %v", tc.name, got.Streamed(), got.Name, got.HasTracked, got.HasApp,
				tc.streamed, want.Name, want.HasTracked, want.HasApp)
		}
		if rows := streamedRows(t, got); !reflect.DeepEqual(rows, want.Jobs) {
			t.Fatalf("%s: rows\n got %+v\nwant %+v", tc.name, rows, want.Jobs)
		}
		g, gj := got.MaxGPUs()
		w, wj := want.MaxGPUs()
		if got.Len() != len(want.Jobs) || got.TrackedCount() != want.TrackedCount() || g != w || !reflect.DeepEqual(*gj, *wj) || got.HasPods() != want.HasPods() {
			t.Fatalf("%s: %d rows, %d tracked, largest %d (%+v), pods %v; want %d, %d, %d (%+v), %v", tc.name, got.Len(), got.TrackedCount(), g, *gj, got.HasPods(),
				len(want.Jobs), want.TrackedCount(), w, *wj, want.HasPods())
		}
		whole, err := got.Whole()
		if err != nil || !reflect.DeepEqual(whole.Jobs, want.Jobs) || whole.Streamed() {
			t.Fatalf("%s: whole: %v, %+v", tc.name, err, whole)
		}
	}
	p := writeFile(t, "r.csv", sorted)
	got, err := StreamTraceFile(p, DefaultModels())
	if err != nil || got.Len() != 4 || got.TrackedCount() != 3 || !got.HasPods() || len(got.Jobs) != 0 {
		t.Fatalf("%v: %d rows, %d tracked, pods %v, %d held", err, got.Len(), got.TrackedCount(), got.HasPods(), len(got.Jobs))
	}
}

// A file changed after its first reading would give another run than
// the one checked: reading it again is an error. Its size or time tells;
// where they do not (a copy that kept both), rows more, fewer or out of
// submit order do.
func TestStreamedTraceChangedIsAnError(t *testing.T) {
	const in = "job_id,num_gpus,submit_time,duration,model\n0,1,0,10,BERT\n1,1,5,10,BERT\n"
	for _, change := range []string{
		in + "2,1,9,10,BERT\n", // a row more
		in[:len(in)-15],        // a row less
		strings.Replace(in, "0,1,0,10", "0,1,7,10", 1), // out of order
	} {
		for _, hidden := range []bool{false, true} {
			p := writeFile(t, "c.csv", in)
			tr, err := StreamTraceFile(p, DefaultModels())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(change), 0o644); err != nil {
				t.Fatal(err)
			}
			if hidden {
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				tr.file.size, tr.file.mod = st.Size(), st.ModTime()
				// Only reading the rows again can tell; kept rows are
				// the ones checked (TestStreamKeepsRows).
				tr.file.kept = nil
			}
			err = tr.Each(func(*Spec) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "changed since it was first read") {
				t.Errorf("%q (stat hidden %v): error %v", change, hidden, err)
			}
		}
	}
}

// A streamed trace of the common kind keeps its rows from the first
// reading (keptRow) and serves them again without parsing the file: the
// same Specs as a trace read whole, even when the file was overwritten
// since with the same size and time (its rows are the ones checked). A
// row a keptRow cannot hold (elastic, app, tenancy, pods), or a file
// over keepRowsBytes, is read from the file as before.
func TestStreamKeepsRows(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model"
	rows := "\n0,1,0,10,BERT\n1,2,5,10,resnet50\n2,4,5,20,BERT\n"
	var big strings.Builder
	big.WriteString(h + "\n")
	for i := 0; big.Len() <= keepRowsBytes; i++ {
		fmt.Fprintf(&big, "%d,1,%d,10,BERT\n", i, i)
	}
	for _, tc := range []struct {
		name, in string
		kept     int // rows kept; -1: none
	}{
		{"common rows", h + rows, 3},
		{"tracked and duration_s", "job_id,num_gpus,submit_time,duration_s,model,tracked\n0,1,0,10,BERT,1\n1,1,3,10.5,GPT2,0\n", 2},
		{"an app", h + ",app" + strings.ReplaceAll(rows, "T\n", "T,a\n"), -1},
		{"elastic", h + ",max_gpus" + strings.ReplaceAll(rows, "T\n", "T,8\n"), -1},
		{"a VC", h + ",vc" + strings.ReplaceAll(rows, "T\n", "T,v\n"), -1},
		{"pods", h + ",pod_gpus" + strings.ReplaceAll(rows, "\n1,2,5,10,resnet50\n", "\n1,2,5,10,resnet50,1\n"), -1},
		{"over keepRowsBytes", big.String(), -1},
	} {
		p := writeFile(t, "k.csv", tc.in)
		whole, err := ReadTraceFile(p, DefaultModels())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tr, err := StreamTraceFile(p, DefaultModels())
		if err != nil || !tr.Streamed() {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := len(tr.file.kept); tc.kept < 0 && tr.file.kept != nil || tc.kept >= 0 && got != tc.kept {
			t.Errorf("%s: %d rows kept (nil %v), want %d", tc.name, got, tr.file.kept == nil, tc.kept)
		}
		if got := streamedRows(t, tr); !slices.Equal(got, whole.Jobs) {
			t.Errorf("%s: rows differ from the trace read whole", tc.name)
		}
		if tc.kept > 0 {
			// The same size and time, other rows: the kept rows serve.
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(tc.in, ",10,", ",90,")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
			if got := streamedRows(t, tr); !slices.Equal(got, whole.Jobs) {
				t.Errorf("%s: rows after a hidden change differ from the first reading", tc.name)
			}
		}
	}
}

// The rows of one file are checked once, and their unknown columns
// warned about once, however many times the file is read again.
func TestStreamedTraceWarnsOnce(t *testing.T) {
	var warned []string
	csvin.SetAllowExtraColumns(func(msg string) { warned = append(warned, msg) })
	defer csvin.SetAllowExtraColumns(nil)
	p := writeFile(t, "x.csv", "job_id,num_gpus,submit_time,duration,model,colour\n0,1,0,10,BERT,red\n")
	tr, err := StreamTraceFile(p, DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	streamedRows(t, tr)
	streamedRows(t, tr)
	if len(warned) != 1 {
		t.Fatalf("warned %d times: %q", len(warned), warned)
	}
}

// LatestEnd is the largest submit time plus length on median GPUs, from
// the first reading when streamed and from the rows when held whole: by
// hand 105 s here (60 + 45; the others end at 100 and 60), and 1e300 + 10
// once a far row is added; rows out of submit order are held whole and
// give the same.
func TestLatestEnd(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration_s,model\n"
	for _, tc := range []struct {
		name, in string
		want     float64
	}{
		{"in order", h + "1,1,0,100,BERT\n2,1,50,10,BERT\n3,2,60,45,BERT\n", 105},
		{"out of order", h + "1,1,60,45,BERT\n2,1,0,100,BERT\n3,2,50,10,BERT\n", 105},
		{"a far row", h + "1,1,0,100,BERT\n2,1,1e300,10,BERT\n", 1e300 + 10},
	} {
		p := writeFile(t, "e.csv", tc.in)
		streamed, err := StreamTraceFile(p, DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		whole, err := ReadTraceFile(p, DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		s, w := streamed.LatestEnd(), whole.LatestEnd()
		if s != w || math.Abs(s-tc.want) > 1e-9*tc.want {
			t.Errorf("%s: streamed %v, whole %v, want %v", tc.name, s, w, tc.want)
		}
	}
	var empty Trace
	if e := empty.LatestEnd(); e != 0 {
		t.Errorf("no rows: %v, want 0", e)
	}
}

// TestBounds: a streamed trace's first reading keeps the most GPUs any
// row can use, the latest submit time and LatestEnd (hand-worked); a
// trace held whole, read whole because its rows are out of order, or
// with a row whose length LatestEnd cannot bound, has none.
func TestBounds(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration_s,model\n"
	const he = "job_id,num_gpus,submit_time,duration_s,model,max_gpus\n"
	for _, tc := range []struct {
		name, in string
		whole    bool // read with ReadTraceFile
		most     int
		end      float64
		ok       bool
	}{
		{"in order", h + "1,1,0,100,BERT\n2,4,50,10,BERT\n3,2,60,45,BERT\n", false, 4, 105, true},
		{"elastic: max_gpus counts", he + "1,1,0,100,BERT,8\n2,4,50,10,BERT,4\n", false, 8, 100, true},
		{"the latest end is not the last row's", h + "1,2,0,500,BERT\n2,1,70,10,BERT\n", false, 2, 500, true},
		{"out of order: read whole", h + "1,1,60,45,BERT\n2,1,0,100,BERT\n", false, 0, 0, false},
		{"held whole", h + "1,1,0,100,BERT\n", true, 0, 0, false},
	} {
		p := writeFile(t, "b.csv", tc.in)
		read := StreamTraceFile
		if tc.whole {
			read = ReadTraceFile
		}
		tr, err := read(p, DefaultModels())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		most, end, ok := tr.Bounds()
		// end is Submit + iterations x iteration time, the duration up to
		// rounding (as in TestLatestEnd).
		if most != tc.most || math.Abs(end-tc.end) > 1e-9*tc.end || ok != tc.ok {
			t.Errorf("%s: Bounds() = %d, %v, %v; want %d, %v, %v", tc.name, most, end, ok, tc.most, tc.end, tc.ok)
		}
	}
	odd := &Trace{file: &traceFile{mostAll: 1, latest: 5, odd: true}}
	if _, _, ok := odd.Bounds(); ok {
		t.Error("a row with a negative or NaN length: Bounds ok, want not")
	}
}

// A built-in trace streamed from its file system keeps its rows compact
// and hands them out, each reading the same, as ReadTraceFS holds them
// and under the same name; one a keptRow cannot hold, or out of submit
// order, is read whole; a bad one is refused word for word as ReadTraceFS
// refuses it, a duplicate id naming its first line, read again from the
// file system.
func TestStreamTraceFS(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model"
	rows := "\n0,1,0,10,BERT\n1,2,5,10,resnet50\n2,4,5,20,BERT\n"
	for _, tc := range []struct {
		name, in string
		streamed bool
	}{
		{"common rows", h + rows, true},
		{"tracked and duration_s", "job_id,num_gpus,submit_time,duration_s,model,tracked\n0,1,0,10,BERT,1\n1,1,3,10.5,GPT2,0\n", true},
		{"an app", h + ",app" + strings.ReplaceAll(rows, "T\n", "T,a\n"), false},
		{"unsorted", h + "\n0,1,9,10,BERT\n1,2,5,10,resnet50\n", false},
	} {
		fsys := fstest.MapFS{"traces/b.csv": {Data: []byte(tc.in)}}
		whole, err := ReadTraceFS(fsys, "traces/b.csv", DefaultModels())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tr, err := StreamTraceFS(fsys, "traces/b.csv", DefaultModels())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tr.Streamed() != tc.streamed || tr.Name != "b.csv" || tr.Len() != len(whole.Jobs) || tr.TrackedCount() != whole.TrackedCount() {
			t.Fatalf("%s: streamed %v name %q, %d rows %d tracked; want streamed %v, b.csv, %d and %d",
				tc.name, tr.Streamed(), tr.Name, tr.Len(), tr.TrackedCount(), tc.streamed, len(whole.Jobs), whole.TrackedCount())
		}
		for range 2 {
			if got := streamedRows(t, tr); !slices.Equal(got, whole.Jobs) {
				t.Errorf("%s: rows differ from the trace read whole", tc.name)
			}
		}
	}
	for _, in := range []string{
		h + "\n0,1,0,10,resnet50\n1,x,5,10,BERT\n",
		h + "\n0,1,0,1,BERT\n7,1,0,1,BERT\n3,1,0,1,BERT\n7,1,0,1,BERT\n",
		h + "\n",
		"job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,1,BERT,0\n",
	} {
		fsys := fstest.MapFS{"traces/bad.csv": {Data: []byte(in)}}
		_, want := ReadTraceFS(fsys, "traces/bad.csv", DefaultModels())
		_, got := StreamTraceFS(fsys, "traces/bad.csv", DefaultModels())
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%q:\n got %v\nwant %v", in, got, want)
		}
	}
}
