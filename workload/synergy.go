package workload

// Synergy-style workloads (PAL §V, experiment A3). The PAL artifact builds
// them from Microsoft Philly's raw `cluster_job_log`, which cannot be had
// here; the Pollux authors' per-job summary of the same log (data.Philly,
// philly/philly.csv) stands in for it. Only each job's GPU demand survives
// from the log: lengths and arrivals are synthetic, as in the artifact.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/palsched/pal/data"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/variability"
)

// The Gavel/Gandiva filter the artifact applies to a Philly job's real
// duration: strictly between 10^1.5 and 10^4 minutes. It is compared in
// seconds so that a boundary value written in a file is tested exactly.
var (
	phillyMinSeconds = 60 * math.Pow(10, 1.5) // 31.6 min
	phillyMaxSeconds = 60 * 1e4               // 166.7 h
)

// PhillyMaxGPUs is the largest gang kept: the artifact skips attempts that
// span more than 16 GPUs.
const PhillyMaxGPUs = 16

// SynergyModel is the model every Synergy job runs unless a ClassMix says
// otherwise. Its iteration takes 1 s, so iterations are seconds.
const SynergyModel = "synergy"

// EmbeddedPhillyName names the embedded Philly trace in error messages and
// in the Source of generated jobs.
const EmbeddedPhillyName = "philly/philly.csv (embedded)"

// phillyColumns are the columns the generator needs; the others
// (timestamp, gpu_time, cluster) may be present and are ignored.
var phillyColumns = []string{"duration", "num_gpus"}

// phillyKnown is every column of the processed Philly trace.
var phillyKnown = []string{"timestamp", "duration", "num_gpus", "gpu_time", "cluster"}

// ReadPhillyDemands reads a processed Philly job trace (columns
// timestamp,duration,num_gpus,gpu_time,cluster, duration in seconds) and
// returns the GPU demands of the jobs the artifact would keep, in file
// order. File order matters: the artifact takes job k's demand from kept
// job k mod N without sorting.
//
// Every row is validated even when the filter would drop it, so a damaged
// file is reported rather than quietly thinned. Errors name file:line and
// the field.
func ReadPhillyDemands(name string, r io.Reader) ([]int, error) {
	jobs, err := ReadPhillyJobs(name, r)
	if err != nil {
		return nil, err
	}
	return phillyDemands(jobs), nil
}

// PhillyJob is one kept Philly job: its run time and GPU count.
type PhillyJob struct {
	Seconds float64
	GPUs    int
}

func phillyDemands(jobs []PhillyJob) []int {
	d := make([]int, len(jobs))
	for i, j := range jobs {
		d[i] = j.GPUs
	}
	return d
}

// ReadPhillyJobs is ReadPhillyDemands keeping each job's duration too.
func ReadPhillyJobs(name string, r io.Reader) ([]PhillyJob, error) {
	t, cols, err := openCSV(name, r, phillyColumns, phillyKnown, "empty file (want a header with columns "+strings.Join(phillyColumns, ",")+")")
	if err != nil {
		return nil, err
	}
	durCol, gpuCol := cols[0], cols[1]
	jobs := []PhillyJob{}
	rows := 0
	for t.Next() {
		if t.Width() != t.HeaderWidth() {
			return nil, t.Errorf(-1, "row has %d fields, header has %d", t.Width(), t.HeaderWidth())
		}
		rows++
		v := t.Text(durCol)
		dur, err := parseFinite(v)
		if err != nil || dur < 0 {
			return nil, t.Errorf(durCol, "%s is not a non-negative number of seconds", quote.Value(v))
		}
		v = t.Text(gpuCol)
		gpus, err := strconv.Atoi(v)
		if err != nil || gpus <= 0 {
			return nil, t.Errorf(gpuCol, "%s is not a positive integer", quote.Value(v))
		}
		if keepPhillyJob(dur, gpus) {
			jobs = append(jobs, PhillyJob{dur, gpus})
		}
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if rows == 0 {
		return nil, fmt.Errorf("%s: no jobs after the header", name)
	}
	return jobs, nil
}

func keepPhillyJob(durSeconds float64, gpus int) bool {
	return durSeconds > phillyMinSeconds && durSeconds < phillyMaxSeconds && gpus <= PhillyMaxGPUs
}

// The embedded trace has 82k rows; parsing it once per process keeps a
// load sweep that generates a trace per load from re-reading it.
var embeddedPhilly struct {
	once    sync.Once
	jobs    []PhillyJob
	demands []int
	err     error
}

func embeddedPhillyJobs() ([]PhillyJob, error) {
	embeddedPhilly.once.Do(func() {
		f, err := data.Philly.Open("philly/philly.csv")
		if err != nil {
			embeddedPhilly.err = fmt.Errorf("%s: %v", EmbeddedPhillyName, err)
			return
		}
		defer f.Close()
		embeddedPhilly.jobs, embeddedPhilly.err = ReadPhillyJobs(EmbeddedPhillyName, f)
		embeddedPhilly.demands = phillyDemands(embeddedPhilly.jobs)
	})
	return embeddedPhilly.jobs, embeddedPhilly.err
}

func embeddedPhillyDemands() ([]int, error) {
	_, err := embeddedPhillyJobs()
	return embeddedPhilly.demands, err
}

// EmbeddedPhillyDemands is ReadPhillyDemands of the embedded trace. The
// slice is the caller's to change.
func EmbeddedPhillyDemands() ([]int, error) {
	d, err := embeddedPhillyDemands()
	if err != nil {
		return nil, err
	}
	return append([]int(nil), d...), nil
}

// TrackRange is an inclusive range of job ids that count in metrics.
type TrackRange struct{ First, Last int }

// ParseTrackRange reads "2000-3000" (inclusive) or a single id "7".
func ParseTrackRange(s string) (TrackRange, error) {
	s = strings.TrimSpace(s)
	a, b, found := strings.Cut(s, "-")
	first, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil || first < 0 {
		return TrackRange{}, fmt.Errorf("track range %s: want FIRST-LAST with non-negative integer ids, e.g. 2000-3000", quote.Value(s))
	}
	last := first
	if found {
		if last, err = strconv.Atoi(strings.TrimSpace(b)); err != nil || last < first {
			return TrackRange{}, fmt.Errorf("track range %s: want FIRST-LAST with FIRST <= LAST, e.g. 2000-3000", quote.Value(s))
		}
	}
	return TrackRange{first, last}, nil
}

func (t TrackRange) String() string { return fmt.Sprintf("%d-%d", t.First, t.Last) }

// MixPart is one weighted choice of a ClassMix. Key is a model name from
// the model table or a class letter (A-D, also "classB"); a class letter
// stands for that class's representative model (see ClassMix).
type MixPart struct {
	Key    string
	Weight float64
}

// ClassMix draws each job's model, and so its class, from weighted
// choices. It exists because the artifact's Synergy runs put every job in
// class A (the Job default is never overridden) although the artifact
// passes model_class_split=(34,33,33); a mix lets the A3 experiment be run
// the way that split suggests, or with any per-model mix.
//
// A trace file carries a model, not a class, so a class is realised by a
// model of that class: "synergy" when it has the class under the table's
// class map, otherwise the alphabetically first model that has it (under
// the artifact map B→BERT, C→vgg19, D→PointNet). The job's length in
// seconds is kept: iterations = seconds / the model's iteration time.
// Beware that anything keyed by model name rather than class (such as a
// per-model locality penalty) then also sees that model.
//
// An empty mix means every job runs "synergy" (class A), as the artifact.
type ClassMix []MixPart

// The named mixes ParseClassMix accepts.
const (
	// MixNone: every job is "synergy", class A (the artifact's behaviour).
	MixNone = "none"
	// MixArtifact: classes A/B/C at 34/33/33, the artifact's unused
	// model_class_split.
	MixArtifact = "artifact"
	// MixZoo: every model of the table except "synergy", equally likely,
	// like the artifact's randint over its model zoo.
	MixZoo = "zoo"
)

// zooKey marks MixZoo until a model table resolves it; no model name can
// start with a NUL.
const zooKey = "\x00zoo"

// ParseClassMix reads a --class-mix value: "none" (or ""), "artifact",
// "zoo", or comma-separated KEY:WEIGHT parts such as "A:50,B:50" or
// "resnet50:2,BERT:1". Weights are relative and need not sum to 1.
func ParseClassMix(s string) (ClassMix, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", MixNone:
		return nil, nil
	case MixArtifact:
		return ClassMix{{"A", 34}, {"B", 33}, {"C", 33}}, nil
	case MixZoo:
		return ClassMix{{zooKey, 1}}, nil
	}
	var m ClassMix
	for part := range strings.SplitSeq(s, ",") {
		k, w, ok := strings.Cut(part, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("class mix %s: part %s is not KEY:WEIGHT (want none, artifact, zoo or e.g. A:34,B:33,C:33)", quote.Value(s), quote.Value(part))
		}
		wt, err := parseFinite(strings.TrimSpace(w))
		if err != nil || wt < 0 {
			return nil, fmt.Errorf("class mix %s: weight of %s: %s is not a non-negative number", quote.Value(s), quote.Value(k), quote.Value(strings.TrimSpace(w)))
		}
		m = append(m, MixPart{k, wt})
	}
	return m, nil
}

func (m ClassMix) String() string {
	if len(m) == 0 {
		return MixNone
	}
	if len(m) == 1 && m[0].Key == zooKey {
		return MixZoo
	}
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = p.Key + ":" + strconv.FormatFloat(p.Weight, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// mixChoice is a resolved part: a model with its cumulative weight.
type mixChoice struct {
	model    string
	iterTime float64
	class    variability.Class
	cum      float64
}

// resolve turns keys into models of the table, so that a typo or a class
// without a model fails before any job is generated.
func (m ClassMix) resolve(models *Models) ([]mixChoice, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if len(m) == 1 && m[0].Key == zooKey {
		m = nil
		for _, n := range models.Names() {
			if n != SynergyModel {
				m = append(m, MixPart{n, 1})
			}
		}
		if len(m) == 0 {
			return nil, errors.New("class mix zoo: the model table has no model besides synergy")
		}
	}
	var out []mixChoice
	total := 0.0
	for _, p := range m {
		name := p.Key
		if _, _, ok := models.Lookup(name); !ok {
			c, err := variability.ParseClass(p.Key)
			if err != nil {
				return nil, fmt.Errorf("class mix %s: %s is neither a model (known: %s) nor a class letter", m, quote.Value(p.Key), models.knownList())
			}
			if name = classModel(models, c); name == "" {
				return nil, fmt.Errorf("class mix %s: no model of class %s in the model table (class map %s)", m, c, models.Map)
			}
		}
		if p.Weight == 0 {
			continue
		}
		it, cl, _ := models.Lookup(name)
		total += p.Weight
		out = append(out, mixChoice{name, it, cl, total})
	}
	if total == 0 || math.IsInf(total, 0) {
		return nil, fmt.Errorf("class mix %s: weights must be finite and not all zero", m)
	}
	for i := range out {
		out[i].cum /= total
	}
	return out, nil
}

// classModel is the model that stands for class c: "synergy" when it has
// that class, else the first by name, so the choice is stable.
func classModel(models *Models, c variability.Class) string {
	if _, cl, ok := models.Lookup(SynergyModel); ok && cl == c {
		return SynergyModel
	}
	for _, n := range models.Names() {
		if _, cl, _ := models.Lookup(n); cl == c {
			return n
		}
	}
	return ""
}

// SynergyOptions says what GenerateSynergy builds.
type SynergyOptions struct {
	Rate float64 // mean arrivals per hour (the artifact's loads are 8, 10, 12, 14)
	Jobs int     // how many jobs to generate
	Seed uint64

	// Mix picks each job's model and class; empty puts every job on
	// "synergy", class A, as the artifact does.
	Mix ClassMix
	// Track limits the jobs that count in metrics (the paper tracks ids
	// 2000-3000); nil tracks every job.
	Track *TrackRange
	// Models resolves model names; nil means DefaultModels().
	Models *Models
}

// Independent streams per quantity, all derived from Seed. Changing Rate
// then moves arrivals only (each gap scales by 1/Rate, up to the ceil),
// leaving every job's GPUs and length alone, so a load sweep compares the
// same jobs; and a Mix changes models only. The artifact reaches the first
// property by reseeding one stream per config.
const (
	streamArrival uint64 = 0x61727269766c
	streamLength  uint64 = 0x6c656e677468
	streamMix     uint64 = 0x6d6978
)

// longJobProb is the share of Gavel-like jobs drawn from the long range.
const longJobProb = 0.2

// gavelLength is the artifact's get_gavel_like_iter: with probability 0.2
// 60·10^U(3,4) s (16.7 h to 6.9 days), else 60·10^U(1.5,3) s (31.6 min
// to 16.7 h). Like the artifact, it draws the branch first, then the
// exponent, and calls a draw ≥ 0.8 long.
func gavelLength(rng *rand.Rand) float64 {
	if rng.Float64() >= 1-longJobProb {
		return 60 * math.Pow(10, 3+rng.Float64())
	}
	return 60 * math.Pow(10, 1.5+1.5*rng.Float64())
}

// poissonGap is the artifact's whole-second gap to the next arrival at
// rate jobs per hour: ceil of an exponential draw in seconds.
func poissonGap(rng *rand.Rand, rate float64) float64 {
	return math.Ceil(-math.Log(1-rng.Float64()) / rate * 3600)
}

// GenerateSynergy reads a processed Philly trace from r and generates a
// Synergy-style workload from it (see GenerateSynergyFromDemands).
func GenerateSynergy(phillyName string, r io.Reader, opt SynergyOptions) ([]Spec, error) {
	d, err := ReadPhillyDemands(phillyName, r)
	if err != nil {
		return nil, err
	}
	return GenerateSynergyFromDemands(phillyName, d, opt)
}

// GenerateSynergyEmbedded generates from the embedded Philly trace, parsed
// once per process.
func GenerateSynergyEmbedded(opt SynergyOptions) ([]Spec, error) {
	d, err := embeddedPhillyDemands()
	if err != nil {
		return nil, err
	}
	return GenerateSynergyFromDemands(EmbeddedPhillyName, d, opt)
}

// GenerateSynergyFromDemands builds opt.Jobs jobs, ids 0..Jobs-1, the way
// the artifact's philly workload does: job k needs demands[k mod N] GPUs
// and runs a Gavel-like length; the first arrives at 0 and the rest follow
// Poisson arrivals at opt.Rate jobs per hour, rounded up to whole seconds.
// source names where the demands came from, for error messages.
func GenerateSynergyFromDemands(source string, demands []int, opt SynergyOptions) ([]Spec, error) {
	if len(demands) == 0 {
		return nil, fmt.Errorf("%s: no Philly job passes the filter (%.1f min < duration < %.0f min, GPUs <= %d)",
			source, phillyMinSeconds/60, phillyMaxSeconds/60, PhillyMaxGPUs)
	}
	if !(opt.Rate > 0) || math.IsInf(opt.Rate, 0) {
		return nil, fmt.Errorf("synergy: rate %v: want a positive number of jobs per hour", opt.Rate)
	}
	if opt.Jobs <= 0 {
		return nil, fmt.Errorf("synergy: jobs %d: want at least one job", opt.Jobs)
	}
	if t := opt.Track; t != nil && (t.First < 0 || t.Last < t.First || t.First >= opt.Jobs) {
		return nil, fmt.Errorf("synergy: track range %s tracks none of jobs 0-%d; nothing would be measured", t, opt.Jobs-1)
	}
	for i, g := range demands {
		if g <= 0 || g > PhillyMaxGPUs {
			return nil, fmt.Errorf("%s: kept job %d needs %d GPUs, want 1-%d", source, i, g, PhillyMaxGPUs)
		}
	}
	models := opt.Models
	if models == nil {
		models = DefaultModels()
	}
	baseIter, baseClass, ok := models.Lookup(SynergyModel)
	choices, err := opt.Mix.resolve(models)
	if err != nil {
		return nil, err
	}
	if !ok && choices == nil {
		return nil, fmt.Errorf("synergy: the model table has no %s model (known: %s)", quote.Value(SynergyModel), models.knownList())
	}
	arrivals := rand.New(rand.NewPCG(opt.Seed, streamArrival))
	lengths := rand.New(rand.NewPCG(opt.Seed, streamLength))
	mix := rand.New(rand.NewPCG(opt.Seed, streamMix))

	jobs := make([]Spec, opt.Jobs)
	submit := 0.0
	for k := range jobs {
		if k > 0 {
			submit += poissonGap(arrivals, opt.Rate)
		}
		secs := gavelLength(lengths)
		model, iterTime, class := SynergyModel, baseIter, baseClass
		if choices != nil {
			u := mix.Float64()
			c := choices[len(choices)-1]
			for _, ch := range choices {
				if u < ch.cum {
					c = ch
					break
				}
			}
			model, iterTime, class = c.model, c.iterTime, c.class
		}
		jobs[k] = Spec{
			ID:         k,
			GPUs:       demands[k%len(demands)],
			Submit:     submit,
			Iterations: secs / iterTime,
			Model:      model,
			IterTime:   iterTime,
			Class:      class,
			Tracked:    opt.Track == nil || (k >= opt.Track.First && k <= opt.Track.Last),
			Source:     source,
		}
	}
	return jobs, nil
}
