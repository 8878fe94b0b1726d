package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/palsched/pal/internal/csvin"
)

func TestReadTrace(t *testing.T) {
	in := "job_id,num_gpus,submit_time,duration,model\n" +
		"1,4,20,100.0,resnet50\n" +
		"0,1,10,50,vgg19\n"
	tr, err := ReadTrace("t.csv", strings.NewReader(in), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 2 || tr.HasTracked || tr.TrackedCount() != 2 {
		t.Fatalf("%+v", tr)
	}
	j := tr.Jobs[0] // sorted by submit time
	if j.ID != 0 || j.GPUs != 1 || j.Submit != 10 || j.Iterations != 50 || j.IterTime != 0.300610341 || j.Class.String() != "C" || j.Line != 3 {
		t.Fatalf("job %+v", j)
	}
	paper, _ := ReadTrace("t.csv", strings.NewReader(in), DefaultModels().WithClassMap(ClassMapPaper))
	if paper.Jobs[0].Class.String() != "A" {
		t.Fatalf("Table II puts vgg19 in class A, got %v", paper.Jobs[0].Class)
	}
}

func TestReadTraceTrackedColumn(t *testing.T) {
	in := "job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,5,BERT,1\n1,2,5,5,GPT2,0\n"
	tr, err := ReadTrace("x.csv", strings.NewReader(in), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	if !tr.HasTracked || tr.TrackedCount() != 1 || tr.Jobs[1].Tracked {
		t.Fatalf("%+v", tr)
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, tr.Jobs); err != nil {
		t.Fatal(err)
	}
	if buf.String() != in {
		t.Fatalf("round trip:\n%s", buf.String())
	}
}

func TestReadTraceErrors(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model\n"
	cases := []struct{ in, want string }{
		{"", `w.csv: empty file`},
		{"job_id,num_gpus,submit_time,model\n", `w.csv:1: missing column "duration"`},
		{h + "0,1,0,10,resnet50\n1,x,5,10,BERT\n", `w.csv:3: field "num_gpus": "x" is not a positive integer`},
		{h + "0,0,0,10,resnet50\n", `w.csv:2: field "num_gpus": "0" is not a positive integer`},
		{h + "0,1,-3,10,resnet50\n", `w.csv:2: field "submit_time": "-3" is not a non-negative number of seconds`},
		{h + "0,1,0,NaN,resnet50\n", `w.csv:2: field "duration": "NaN" is not a positive iteration count`},
		{h + "0,1,0,10,alexnet\n", `w.csv:2: field "model": unknown model "alexnet"`},
		{h + "0,1,0,10\n", `w.csv:2: field "model": missing`},
		{h + "0,1,0,10,BERT\n0,1,0,10,BERT\n", `w.csv:3: field "job_id": id 0 already used on line 2`},
		{h, `w.csv: no jobs after the header`},
		{h + "0,1,0,10,\"BERT\n", `w.csv:2: column`},
		{"job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,1,BERT,yes\n", `w.csv:2: field "tracked": "yes" is not 1 or 0`},
		{"job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,1,BERT,0\n", `every row has tracked=0`},
	}
	for _, tc := range cases {
		_, err := ReadTrace("w.csv", strings.NewReader(tc.in), DefaultModels())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("input %q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add("job_id,num_gpus,submit_time,duration,model\n0,1,0,10,resnet50\n")
	f.Add("job_id,num_gpus,submit_time,duration,model,tracked\n0,1,0,1,BERT,1\n1,48,1e3,2.5,GPT2,0\n")
	f.Add("model,duration,job_id,submit_time,num_gpus\nvgg19,3,7,8,2\n\n")
	f.Add("job_id,num_gpus\n\"\n")
	f.Add("job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,priority\n0,8,4,0,3600,A,5\n1,1,,10,60,B,-1\n")
	f.Add("job_id,num_gpus,submit_time,duration,model,app,max_gpus\n0,1,0,10,vgg19,a,4\n1,2,5,10,vgg19,a,\n2,2,6,1,BERT,,2\n")
	models := DefaultModels()
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ReadTrace("f.csv", strings.NewReader(in), models)
		if err != nil {
			if tr != nil {
				t.Fatal("trace returned with an error")
			}
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		if len(tr.Jobs) == 0 || tr.TrackedCount() == 0 {
			t.Fatal("accepted an empty trace")
		}
		for i, j := range tr.Jobs {
			if j.GPUs <= 0 || j.Iterations <= 0 || j.Submit < 0 || j.IterTime <= 0 {
				t.Fatalf("accepted bad job %+v", j)
			}
			if j.VCPriority < -1 || j.VCPriority > 1000 || j.PodGPUs < 0 || (j.PodGPUs > 0 && j.GPUs%j.PodGPUs != 0) {
				t.Fatalf("accepted bad tenancy fields %+v", j)
			}
			if j.MaxGPUs != 0 && (j.MaxGPUs <= j.GPUs || j.MaxGPUs > MaxElasticGPUs || j.PodGPUs > 0) {
				t.Fatalf("accepted bad max_gpus %+v", j)
			}
			if i > 0 && tr.Jobs[i-1].Submit > j.Submit {
				t.Fatal("not sorted by submit time")
			}
		}
	})
}

func TestModelTable(t *testing.T) {
	m := DefaultModels()
	if it, c, ok := m.Lookup("PointNet"); !ok || it != 0.28125 || c.String() != "D" {
		t.Fatalf("PointNet: %v %v %v", it, c, ok)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"models: []", `field "models": no models listed`},
		{"models:\n  - name: x\n    iter_time_s: 0\n    class: A", `field "iter_time_s" must be a positive number`},
		{"models:\n  - name: x\n    iter_time_s: 1\n    class: Z", `field "class": unknown class "Z"`},
		{"models:\n  - name: x\n    iter_time_s: 1\n    class: A\n    colour: red", `m.yaml:5: unknown field "colour"`},
		// Errors speak YAML (mapping, list, number), never Go types or JSON.
		{"models:\n  x: {iter_time_s: 1}", `m.yaml:2: want a list (- item), found a mapping (key: value)`},
		{"models:\n  - name: x\n    iter_time_s: fast\n    class: A", `m.yaml:3: want a number, found a string "fast"`},
		{"models:\n  - name: x\n    iter_time_s: -1\n    class: A", `m.yaml:2: models[0] (x): field "iter_time_s" must be a positive number`},
		{"models: [", `m.yaml:`},
	} {
		_, err := ParseModels("m.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func FuzzParseModels(f *testing.F) {
	f.Add([]byte("models:\n  - name: a\n    iter_time_s: 1\n    class: A\n"))
	f.Add([]byte("models: [{name: b, iter_time_s: 0.5, class: classB, paper_class: C}]"))
	f.Add([]byte("models:\n  - name: c\n    iter_time_s: 2\n    class: D\n    migration_cost_s: 90\n    preemption_cost_s: 0\n"))
	// What the decoder or the checks copy from the file, made long: keys
	// (a plain key may have 1024 bytes), a model's name of control bytes
	// (which %q writes four characters each), a tag, an anchor, and a row
	// with a thousand unknown keys.
	long := strings.Repeat("k", 8000)
	f.Add([]byte("models:\n  - name: a\n    iter_time_s: 1\n    class: A\n    " + long[:1000] + ": 1\n    " + long[:999] + ": 1\n"))
	f.Add([]byte("models:\n  - name: \"" + strings.Repeat(`\x01`, 8000) + "\"\n    iter_time_s: 0\n    class: A\n"))
	f.Add([]byte("models:\n  - name: a\n    iter_time_s: !!" + long + " 1\n    class: A\n"))
	f.Add([]byte("models: *" + long + "\n"))
	var many strings.Builder
	many.WriteString("models:\n  - name: a\n")
	for i := range 1000 {
		fmt.Fprintf(&many, "    k%d: 1\n", i)
	}
	f.Add([]byte(many.String()))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseModels("f.yaml", b)
		if err != nil {
			if n := len(err.Error()); n > 2048 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		costs := Costs{Models: m}
		for _, n := range m.Names() {
			if it, _, ok := m.Lookup(n); !ok || !(it > 0) {
				t.Fatalf("model %q accepted with iter time %v", n, it)
			}
			// Every accepted cost is one a run can charge.
			if err := costs.For(&Spec{Model: n}).Validate("model " + n); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A row with more fields than the header is an error naming file and line.
func TestTraceRowWiderThanHeader(t *testing.T) {
	in := "job_id,num_gpus,submit_time,duration,model\n0,1,0,100,vgg19\n1,1,5,100,vgg19,7\n"
	_, err := ReadTrace("w.csv", strings.NewReader(in), DefaultModels())
	if err == nil || !strings.Contains(err.Error(), "w.csv:3: 6 fields, but the header names 5") {
		t.Fatalf("error %v", err)
	}
}

func TestReadTraceDuplicateIDs(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model\n"
	big := "1099511627776" // past the dense bitmap: ids there go to a map
	cases := []struct{ rows, want string }{
		{"0,1,0,1,BERT\n7,1,0,1,BERT\n3,1,0,1,BERT\n7,1,0,1,BERT\n", `w.csv:5: field "job_id": id 7 already used on line 3`},
		{"64,1,0,1,BERT\n" + big + ",1,0,1,BERT\n63,1,0,1,BERT\n" + big + ",1,0,1,BERT\n", `w.csv:5: field "job_id": id ` + big + ` already used on line 3`},
		{"5,1,0,1,BERT\n" + big + ",1,0,1,BERT\n6,1,0,1,BERT\n5,1,0,1,BERT\n", `w.csv:5: field "job_id": id 5 already used on line 2`},
	}
	for _, tc := range cases {
		_, err := ReadTrace("w.csv", strings.NewReader(h+tc.rows), DefaultModels())
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.rows, err, tc.want)
		}
	}
	tr, err := ReadTrace("w.csv", strings.NewReader(h+"64,1,0,1,BERT\n"+big+",1,0,1,BERT\n63,1,0,1,BERT\n0,1,0,1,BERT\n"), DefaultModels())
	if err != nil || len(tr.Jobs) != 4 {
		t.Fatalf("distinct ids refused: %v", err)
	}
}

// ReadTraceFile sizes the job list from the file: never by more than the
// file's lines, nor by more than one job per minRowBytes of file.
func TestMaxRows(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 1},
		{"job_id,num_gpus,submit_time,duration,model\n0,1,0,10,BERT\n", 3},
		{strings.Repeat("\n", 100), 13},
	} {
		if got, err := maxRows(strings.NewReader(tc.in)); err != nil || got != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// A built-in trace read from memory gets the same jobs as ReadTrace, in one
// allocation: grown by append, a few thousand rows cost a Sia-Philly run
// as much again as its simulation (copies, fresh pages, a collection).
func TestReadTraceBytesAllocatesOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("job_id,num_gpus,submit_time,duration,model\n")
	const rows = 3000
	for i := range rows {
		fmt.Fprintf(&b, "%d,1,%d,100,vgg19\n", i, rows-i) // reverse submit order: sorted on read
	}
	in := []byte(b.String())
	got, err := ReadTraceBytes("t.csv", in, DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadTrace("t.csv", bytes.NewReader(in), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != rows || !slices.Equal(got.Jobs, want.Jobs) {
		t.Fatalf("ReadTraceBytes read %d jobs, not ReadTrace's %d", len(got.Jobs), len(want.Jobs))
	}
	// One line per row plus the header and the final empty line: the
	// slice was sized from the newlines, not grown (growth gives 3072).
	if c := cap(got.Jobs); c != rows+2 {
		t.Fatalf("jobs allocated with capacity %d, want %d (the lines' count)", c, rows+2)
	}
}

// noSeek hides a file's Seek (and ReadAt), as an fs.FS of plain readers
// would: ReadTraceFS then reads the file into memory first.
type noSeek struct{ fs.FS }

func (n noSeek) Open(p string) (fs.File, error) {
	f, err := n.FS.Open(p)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		statCloser
	}{f, f}, nil
}

type statCloser interface {
	Stat() (fs.FileInfo, error)
	Close() error
}

// A built-in trace read in place gets ReadTrace's jobs, in one
// allocation sized by its lines, under its base name; a file that
// cannot seek is read whole first and gives the same; errors name the
// base name and line as ReadTrace's do.
func TestReadTraceFS(t *testing.T) {
	var b strings.Builder
	b.WriteString("job_id,num_gpus,submit_time,duration,model\n")
	const rows = 3000
	for i := range rows {
		fmt.Fprintf(&b, "%d,1,%d,100,vgg19\n", i, rows-i)
	}
	fsys := fstest.MapFS{
		"traces/t.csv":   {Data: []byte(b.String())},
		"traces/bad.csv": {Data: []byte("job_id,num_gpus,submit_time,duration,model\n0,1,5,100,vgg19\n1,x,6,100,vgg19\n")},
	}
	want, err := ReadTrace("t.csv", strings.NewReader(b.String()), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		fsys fs.FS
	}{{"in place", fsys}, {"no seek", noSeek{fsys}}} {
		got, err := ReadTraceFS(tc.fsys, "traces/t.csv", DefaultModels())
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if got.Name != "t.csv" || !slices.Equal(got.Jobs, want.Jobs) {
			t.Fatalf("%s: read %q with %d jobs, not ReadTrace's %d", tc.what, got.Name, len(got.Jobs), len(want.Jobs))
		}
		if c := cap(got.Jobs); c != rows+2 {
			t.Fatalf("%s: jobs allocated with capacity %d, want %d (the lines' count)", tc.what, c, rows+2)
		}
		_, err = ReadTraceFS(tc.fsys, "traces/bad.csv", DefaultModels())
		if err == nil || !strings.Contains(err.Error(), "bad.csv:3") || !strings.Contains(err.Error(), "num_gpus") {
			t.Fatalf("%s: bad row: %v, want an error naming bad.csv:3 and num_gpus", tc.what, err)
		}
	}
	if _, err := ReadTraceFS(fsys, "traces/none.csv", DefaultModels()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// An error quotes the value it could not read, but never more than a
// short cut of it: a field of a megabyte of invalid bytes (which %q
// writes four characters each) still makes a message of a few hundred
// bytes, naming the field.
func TestReadTraceLongValueErrorsStayShort(t *testing.T) {
	cols := []string{"job_id", "num_gpus", "submit_time", "duration", "model", "vc", "priority", "pod_gpus", "tracked", "app", "max_gpus"}
	good := []string{"0", "2", "0", "10", "resnet50", "A", "0", "", "1", "a", ""}
	junk := strings.Repeat("\x98", 1<<19) + "x"
	var failed []string
	for i, c := range cols {
		row := slices.Clone(good)
		row[i] = junk
		in := strings.Join(cols, ",") + "\n" + strings.Join(row, ",") + "\n"
		_, err := ReadTrace("w.csv", strings.NewReader(in), DefaultModels())
		if err == nil {
			continue
		}
		failed = append(failed, c)
		if msg := err.Error(); len(msg) > 1024 || !strings.Contains(msg, `field "`+c+`"`) || !strings.Contains(msg, "(524289 bytes)") {
			t.Errorf("column %s: error of %d bytes: %.300s", c, len(msg), msg)
		}
	}
	// vc and app are names: any bytes are one.
	if want := []string{"job_id", "num_gpus", "submit_time", "duration", "model", "priority", "pod_gpus", "tracked", "max_gpus"}; !slices.Equal(failed, want) {
		t.Errorf("columns refused: %v, want %v", failed, want)
	}
}

// A row longer than its header names the header's columns, and a header
// kept by --allow-extra-columns may hold a name of any length: the
// message still cuts it.
func TestReadTraceLongRowOfALongHeader(t *testing.T) {
	long := strings.Repeat("h", 1<<19)
	in := "job_id,num_gpus,submit_time,duration_s," + long + "\n0,1,0,10,x,extra\n"
	csvin.SetAllowExtraColumns(func(string) {})
	defer csvin.SetAllowExtraColumns(nil)
	_, err := ReadTrace("w.csv", strings.NewReader(in), DefaultModels())
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "w.csv:2: 6 fields, but the header names 5 (job_id,num_gpus,submit_time,duration_s,") {
		t.Errorf("error of %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
