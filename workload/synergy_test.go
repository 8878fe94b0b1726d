package workload

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/palsched/pal/variability"
)

const phillyHeader = "timestamp,duration,num_gpus,gpu_time,cluster\n"

func phillyRow(dur string, gpus string) string {
	return "2017-10-09 07:01:55," + dur + "," + gpus + ",0,abc\n"
}

func fmtSeconds(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestReadPhillyDemandsFilter(t *testing.T) {
	lo, hi := phillyMinSeconds, phillyMaxSeconds
	cases := map[string]struct {
		rows string
		want []int
	}{
		"exactly 10^1.5 min is excluded": {phillyRow(fmtSeconds(lo), "1"), []int{}},
		"just above 10^1.5 min is kept":  {phillyRow(fmtSeconds(math.Nextafter(lo, math.Inf(1))), "2"), []int{2}},
		"exactly 10^4 min is excluded":   {phillyRow("600000", "1"), []int{}},
		"just below 10^4 min is kept":    {phillyRow(fmtSeconds(math.Nextafter(hi, 0)), "4"), []int{4}},
		"zero duration is excluded":      {phillyRow("0", "1"), []int{}},
		"16 GPUs is kept":                {phillyRow("3600", "16"), []int{16}},
		"17 GPUs is excluded":            {phillyRow("3600", "17"), []int{}},
		"128 GPUs is excluded":           {phillyRow("3600", "128"), []int{}},
		"file order, not sorted": {
			phillyRow("3600", "8") + phillyRow("60", "1") + phillyRow("7200.5", "1") + phillyRow("1e5", "2"),
			[]int{8, 1, 2},
		},
		"blank lines are skipped": {"\n" + phillyRow("3600", "1") + "\n\n", []int{1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadPhillyDemands("p.csv", strings.NewReader(phillyHeader+tc.rows))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("demands = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadPhillyDemandsColumnsByName(t *testing.T) {
	in := "num_gpus,duration\n4,3600\n"
	got, err := ReadPhillyDemands("p.csv", strings.NewReader(in))
	if err != nil || !reflect.DeepEqual(got, []int{4}) {
		t.Fatalf("got %v, %v; want [4], nil", got, err)
	}
}

func TestReadPhillyDemandsErrors(t *testing.T) {
	cases := map[string]struct {
		in, want string
	}{
		"empty file":           {"", "p.csv: empty file"},
		"header only":          {phillyHeader, "p.csv: no jobs after the header"},
		"no num_gpus column":   {"timestamp,duration\nx,1\n", `p.csv:1: missing column "num_gpus"`},
		"duplicate column":     {"duration,num_gpus,duration\n", `p.csv:1: column "duration" appears twice`},
		"gpus not an integer":  {phillyHeader + phillyRow("3600", "1") + phillyRow("3600", "1.5"), `p.csv:3: field "num_gpus": "1.5"`},
		"zero gpus":            {phillyHeader + phillyRow("3600", "0"), `p.csv:2: field "num_gpus": "0" is not a positive integer`},
		"negative duration":    {phillyHeader + phillyRow("-1", "1"), `p.csv:2: field "duration": "-1"`},
		"NaN duration":         {phillyHeader + phillyRow("NaN", "1"), `p.csv:2: field "duration": "NaN"`},
		"infinite duration":    {phillyHeader + phillyRow("+Inf", "1"), `p.csv:2: field "duration"`},
		"empty duration":       {phillyHeader + phillyRow("", "1"), `p.csv:2: field "duration": ""`},
		"short row":            {phillyHeader + "2017-10-09,3600,1\n", "p.csv:2: row has 3 fields, header has 5"},
		"bad quoting":          {phillyHeader + "a,\"3600,1,0,x\n", "p.csv:2"},
		"bad row after filter": {phillyHeader + phillyRow("10", "1") + phillyRow("10", "x"), `p.csv:3: field "num_gpus"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadPhillyDemands("p.csv", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The provenance note (PROVENANCE.md §2) reports 31,676 kept jobs, 90.9%
// single-GPU, for this filter on this file.
func TestEmbeddedPhillyDemands(t *testing.T) {
	d, err := EmbeddedPhillyDemands()
	if err != nil {
		t.Fatal(err)
	}
	const wantKept, wantSingle = 31676, 28808
	single := 0
	for _, g := range d {
		if g == 1 {
			single++
		}
		if g < 1 || g > PhillyMaxGPUs {
			t.Fatalf("kept a job with %d GPUs", g)
		}
	}
	if len(d) != wantKept || single != wantSingle {
		t.Fatalf("kept %d jobs, %d single-GPU; want %d and %d", len(d), single, wantKept, wantSingle)
	}
	if share := math.Round(1000*float64(single)/float64(len(d))) / 10; share != 90.9 {
		t.Errorf("single-GPU share %.1f%%, provenance note says 90.9%%", share)
	}
	d[0] = 99 // the copy is the caller's
	if again, _ := EmbeddedPhillyDemands(); again[0] == 99 {
		t.Error("EmbeddedPhillyDemands returned the cached slice")
	}
}

func TestGavelLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 100000
	var long int
	var logShort, logLong float64
	for range n {
		s := gavelLength(rng)
		e := math.Log10(s / 60)
		switch {
		case e >= 3 && e < 4:
			long++
			logLong += e
		case e >= 1.5 && e < 3:
			logShort += e
		default:
			t.Fatalf("length %v s: 10^%.3f min is outside [10^1.5, 10^4)", s, e)
		}
	}
	// 5 standard deviations of a binomial share over n draws.
	tol := 5 * math.Sqrt(longJobProb*(1-longJobProb)/n)
	if f := float64(long) / n; math.Abs(f-longJobProb) > tol {
		t.Errorf("long share %.4f, want %.2f ± %.4f", f, longJobProb, tol)
	}
	// Exponents are uniform, so their means are the ranges' midpoints.
	if m := logLong / float64(long); math.Abs(m-3.5) > 0.01 {
		t.Errorf("mean long exponent %.4f, want 3.5", m)
	}
	if m := logShort / float64(n-long); math.Abs(m-2.25) > 0.01 {
		t.Errorf("mean short exponent %.4f, want 2.25", m)
	}
}

func TestPoissonGaps(t *testing.T) {
	for _, rate := range []float64{8, 10, 14} {
		t.Run(strconv.FormatFloat(rate, 'g', -1, 64), func(t *testing.T) {
			const n = 20000
			jobs, err := GenerateSynergyFromDemands("d", []int{1}, SynergyOptions{Rate: rate, Jobs: n + 1, Seed: 11})
			if err != nil {
				t.Fatal(err)
			}
			if jobs[0].Submit != 0 {
				t.Fatalf("first arrival at %v, want 0", jobs[0].Submit)
			}
			sum := 0.0
			for k := 1; k <= n; k++ {
				g := jobs[k].Submit - jobs[k-1].Submit
				if g < 0 || g != math.Trunc(g) {
					t.Fatalf("gap %v before job %d: want a whole non-negative number of seconds", g, k)
				}
				sum += g
			}
			// The ceil adds half a second on average; the exponential's
			// mean over n draws has a standard deviation of mean/sqrt(n).
			want := 3600/rate + 0.5
			tol := 4 * 3600 / rate / math.Sqrt(n)
			if m := sum / n; math.Abs(m-want) > tol {
				t.Errorf("mean gap %.2f s, want %.2f ± %.2f", m, want, tol)
			}
		})
	}
}

func TestGenerateSynergyDemandsCycle(t *testing.T) {
	jobs, err := GenerateSynergyFromDemands("d", []int{1, 2, 4}, SynergyOptions{Rate: 10, Jobs: 7, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 2, 4, 1, 2, 4, 1}
	for k, j := range jobs {
		if j.ID != k || j.GPUs != want[k] || j.Model != SynergyModel || j.IterTime != 1 ||
			j.Class != variability.ClassA || !j.Tracked || j.Source != "d" {
			t.Errorf("job %d = %+v; want id %d, %d GPUs, synergy, 1 s, class A, tracked", k, j, k, want[k])
		}
		if j.Iterations < phillyMinSeconds || j.Iterations >= phillyMaxSeconds {
			t.Errorf("job %d runs %v s, outside the Gavel-like range", k, j.Iterations)
		}
	}
}

func TestGenerateSynergyDeterminism(t *testing.T) {
	demands := []int{1, 1, 2, 4, 8, 16, 1}
	gen := func(opt SynergyOptions) []Spec {
		t.Helper()
		jobs, err := GenerateSynergyFromDemands("d", demands, opt)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	base := SynergyOptions{Rate: 10, Jobs: 200, Seed: 1}
	a, b := gen(base), gen(base)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different jobs")
	}
	other := base
	other.Seed = 2
	c := gen(other)
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 1 and 2 gave the same jobs")
	}

	// A load sweep keeps the jobs and only moves arrivals.
	faster := base
	faster.Rate = 14
	f := gen(faster)
	mixed := base
	mixed.Mix = ClassMix{{"A", 1}, {"B", 1}, {"C", 1}}
	m := gen(mixed)
	for k := range a {
		if f[k].GPUs != a[k].GPUs || f[k].Iterations != a[k].Iterations {
			t.Fatalf("job %d changed size or length with the rate", k)
		}
		if k > 0 && f[k].Submit >= a[k].Submit {
			t.Fatalf("job %d arrives at %v at rate 14, not before %v at rate 10", k, f[k].Submit, a[k].Submit)
		}
		if m[k].Submit != a[k].Submit || m[k].GPUs != a[k].GPUs ||
			math.Abs(m[k].IdealRuntime()-a[k].IdealRuntime()) > 1e-9*a[k].IdealRuntime() {
			t.Fatalf("job %d: a class mix changed arrival, size or length", k)
		}
	}
}

func TestGenerateSynergyTrack(t *testing.T) {
	jobs, err := GenerateSynergyFromDemands("d", []int{1}, SynergyOptions{Rate: 10, Jobs: 10, Seed: 1, Track: &TrackRange{3, 5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if want := j.ID >= 3 && j.ID <= 5; j.Tracked != want {
			t.Errorf("job %d tracked=%v, want %v", j.ID, j.Tracked, want)
		}
	}
}

func TestGenerateSynergyOptionErrors(t *testing.T) {
	ok := SynergyOptions{Rate: 10, Jobs: 5, Seed: 1}
	cases := map[string]struct {
		demands []int
		edit    func(*SynergyOptions)
		want    string
	}{
		"no demands":       {nil, func(*SynergyOptions) {}, "d: no Philly job passes the filter"},
		"zero rate":        {[]int{1}, func(o *SynergyOptions) { o.Rate = 0 }, "rate 0"},
		"NaN rate":         {[]int{1}, func(o *SynergyOptions) { o.Rate = math.NaN() }, "rate NaN"},
		"no jobs":          {[]int{1}, func(o *SynergyOptions) { o.Jobs = 0 }, "jobs 0"},
		"track past end":   {[]int{1}, func(o *SynergyOptions) { o.Track = &TrackRange{5, 9} }, "tracks none of jobs 0-4"},
		"track reversed":   {[]int{1}, func(o *SynergyOptions) { o.Track = &TrackRange{3, 2} }, "track range 3-2"},
		"demand too big":   {[]int{1, 17}, func(*SynergyOptions) {}, "kept job 1 needs 17 GPUs"},
		"unknown mix key":  {[]int{1}, func(o *SynergyOptions) { o.Mix = ClassMix{{"resnet", 1}} }, `"resnet" is neither a model`},
		"all-zero weights": {[]int{1}, func(o *SynergyOptions) { o.Mix = ClassMix{{"A", 0}} }, "not all zero"},
		"class D in paper": {[]int{1}, func(o *SynergyOptions) {
			o.Mix = ClassMix{{"D", 1}}
			o.Models = DefaultModels().WithClassMap(ClassMapPaper)
		}, "no model of class D"},
		"no synergy model":  {[]int{1}, func(o *SynergyOptions) { o.Models = modelsWithout(t, SynergyModel) }, `no "synergy" model`},
		"zoo with only one": {[]int{1}, func(o *SynergyOptions) { o.Mix = ClassMix{{zooKey, 1}}; o.Models = onlySynergy(t) }, "no model besides synergy"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opt := ok
			tc.edit(&opt)
			_, err := GenerateSynergyFromDemands("d", tc.demands, opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func modelsWithout(t *testing.T, drop string) *Models {
	t.Helper()
	m := DefaultModels()
	c := &Models{byName: map[string]*Model{}, Map: m.Map}
	for n, md := range m.byName {
		if n != drop {
			c.byName[n] = md
		}
	}
	return c
}

func onlySynergy(t *testing.T) *Models {
	t.Helper()
	m, err := ParseModels("t", []byte("models:\n  - name: synergy\n    iter_time_s: 1\n    class: A\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseClassMix(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    ClassMix
		wantErr string
	}{
		"empty":        {in: "", want: nil},
		"none":         {in: "none", want: nil},
		"artifact":     {in: "artifact", want: ClassMix{{"A", 34}, {"B", 33}, {"C", 33}}},
		"zoo":          {in: "zoo", want: ClassMix{{zooKey, 1}}},
		"explicit":     {in: " A:1, resnet50:2.5 ", want: ClassMix{{"A", 1}, {"resnet50", 2.5}}},
		"no weight":    {in: "A", wantErr: `part "A" is not KEY:WEIGHT`},
		"empty key":    {in: ":3", wantErr: "is not KEY:WEIGHT"},
		"bad weight":   {in: "A:x", wantErr: `weight of "A": "x"`},
		"negative":     {in: "A:-1", wantErr: "non-negative"},
		"infinite":     {in: "A:Inf", wantErr: "non-negative"},
		"trailing sep": {in: "A:1,", wantErr: `part "" is not KEY:WEIGHT`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseClassMix(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if again, err := ParseClassMix(got.String()); err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("String %q does not parse back: %v, %v", got.String(), again, err)
			}
		})
	}
}

func TestClassMixShares(t *testing.T) {
	cases := map[string]struct {
		mix    string
		models *Models
		want   map[string]float64 // model -> share
		class  map[string]variability.Class
	}{
		"artifact split": {
			mix: "artifact", models: DefaultModels(),
			want:  map[string]float64{"synergy": 0.34, "BERT": 0.33, "vgg19": 0.33},
			class: map[string]variability.Class{"synergy": variability.ClassA, "BERT": variability.ClassB, "vgg19": variability.ClassC},
		},
		"paper map picks PointNet for C": {
			mix: "A:1,C:1", models: DefaultModels().WithClassMap(ClassMapPaper),
			want:  map[string]float64{"synergy": 0.5, "PointNet": 0.5},
			class: map[string]variability.Class{"synergy": variability.ClassA, "PointNet": variability.ClassC},
		},
		"models by name, zero weight dropped": {
			mix: "resnet50:3,GPT2:1,BERT:0", models: DefaultModels(),
			want:  map[string]float64{"resnet50": 0.75, "GPT2": 0.25},
			class: map[string]variability.Class{"resnet50": variability.ClassA, "GPT2": variability.ClassB},
		},
		"zoo": {
			mix: "zoo", models: DefaultModels(),
			want: map[string]float64{"BERT": 1. / 6, "DCGAN": 1. / 6, "GPT2": 1. / 6, "PointNet": 1. / 6, "resnet50": 1. / 6, "vgg19": 1. / 6},
		},
	}
	const n = 30000
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mix, err := ParseClassMix(tc.mix)
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := GenerateSynergyFromDemands("d", []int{1}, SynergyOptions{Rate: 10, Jobs: n, Seed: 5, Mix: mix, Models: tc.models})
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, j := range jobs {
				count[j.Model]++
				it, cl, ok := tc.models.Lookup(j.Model)
				if !ok || j.IterTime != it || j.Class != cl {
					t.Fatalf("job %d: model %s with %v s, class %s; table says %v s, class %s", j.ID, j.Model, j.IterTime, j.Class, it, cl)
				}
				if want, ok := tc.class[j.Model]; ok && j.Class != want {
					t.Fatalf("model %s has class %s, want %s", j.Model, j.Class, want)
				}
			}
			for model, share := range tc.want {
				tol := 5 * math.Sqrt(share*(1-share)/n)
				if got := float64(count[model]) / n; math.Abs(got-share) > tol {
					t.Errorf("%s share %.4f, want %.4f ± %.4f", model, got, share, tol)
				}
				delete(count, model)
			}
			if len(count) != 0 {
				t.Errorf("unexpected models %v", count)
			}
		})
	}
}

// What the generator makes must survive the PAL trace format unchanged,
// since `pal trace synergy` hands it on through a file.
func TestGenerateSynergyRoundTrip(t *testing.T) {
	for _, mix := range []string{"none", "artifact", "zoo"} {
		t.Run(mix, func(t *testing.T) {
			m, err := ParseClassMix(mix)
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := GenerateSynergyEmbedded(SynergyOptions{Rate: 12, Jobs: 300, Seed: 9, Mix: m, Track: &TrackRange{100, 199}})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteTrace(&buf, jobs); err != nil {
				t.Fatal(err)
			}
			tr, err := ReadTrace("t.csv", &buf, DefaultModels())
			if err != nil {
				t.Fatal(err)
			}
			if !tr.HasTracked || tr.TrackedCount() != 100 || len(tr.Jobs) != len(jobs) {
				t.Fatalf("read back %d jobs, %d tracked (tracked column %v); want 300, 100, true", len(tr.Jobs), tr.TrackedCount(), tr.HasTracked)
			}
			for k := range jobs {
				got, want := tr.Jobs[k], jobs[k]
				got.Source, got.Line, want.Source = "", 0, ""
				if got != want {
					t.Fatalf("job %d read back as %+v, want %+v", k, got, want)
				}
			}
		})
	}
}

func TestParseTrackRange(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    TrackRange
		wantErr bool
	}{
		"range":       {in: "2000-3000", want: TrackRange{2000, 3000}},
		"spaces":      {in: " 0 - 10 ", want: TrackRange{0, 10}},
		"single id":   {in: "7", want: TrackRange{7, 7}},
		"reversed":    {in: "10-2", wantErr: true},
		"negative":    {in: "-3-5", wantErr: true},
		"open ended":  {in: "5-", wantErr: true},
		"not numbers": {in: "a-b", wantErr: true},
		"empty":       {in: "", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTrackRange(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseTrackRange(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func FuzzReadPhillyDemands(f *testing.F) {
	f.Add([]byte(phillyHeader + phillyRow("3600", "1") + phillyRow("1897.3665961010276", "16")))
	f.Add([]byte("num_gpus,duration\n4,3600\n\n"))
	f.Add([]byte(phillyHeader + "a,\"3600,1,0,x\n"))
	f.Add([]byte("\ufeffduration,num_gpus\n1e5,17\n-0,1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ReadPhillyDemands("f.csv", bytes.NewReader(in))
		if err != nil {
			if d != nil {
				t.Fatal("demands returned with an error")
			}
			if !strings.HasPrefix(err.Error(), "f.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error %.300q does not name the file, or is over 1 KiB", err)
			}
			return
		}
		for _, g := range d {
			if g < 1 || g > PhillyMaxGPUs {
				t.Fatalf("kept a job with %d GPUs", g)
			}
		}
		again, err := ReadPhillyDemands("f.csv", bytes.NewReader(in))
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatal("parsing is not repeatable")
		}
	})
}
