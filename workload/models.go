package workload

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/internal/sizecap"
	"github.com/palsched/pal/variability"
)

// ClassMap names which column of the model table gives a job its class.
type ClassMap string

// The two class maps: what the artifact's code does, and Table II of the paper.
const (
	ClassMapArtifact ClassMap = "artifact"
	ClassMapPaper    ClassMap = "paper"
)

// ParseClassMap validates a --class-map value.
func ParseClassMap(s string) (ClassMap, error) {
	switch ClassMap(s) {
	case ClassMapArtifact, ClassMapPaper:
		return ClassMap(s), nil
	}
	return "", fmt.Errorf("--class-map %s: want artifact or paper", quote.Value(s))
}

// Model is one row of the model table.
type Model struct {
	Name       string  `json:"name" yaml:"name"`
	IterTime   float64 `json:"iter_time_s" yaml:"iter_time_s"`
	Class      string  `json:"class" yaml:"class"`
	PaperClass string  `json:"paper_class" yaml:"paper_class"`
	// MigrationCost and PreemptionCost, if given, price this model's
	// moves in place of --migration-cost and --preemption-cost (seconds
	// of lost progress; see MoveCost).
	MigrationCost  *float64 `json:"migration_cost_s,omitempty" yaml:"migration_cost_s,omitempty"`
	PreemptionCost *float64 `json:"preemption_cost_s,omitempty" yaml:"preemption_cost_s,omitempty"`
	// SpreadFactor and RackFactor are the model's throughput factors when
	// a job's GPUs span machines and racks (Themis' placement
	// sensitivity; 1 = insensitive, the default when absent). Only
	// finish-time-fair scheduling reads them.
	SpreadFactor float64 `json:"spread_factor,omitempty" yaml:"spread_factor,omitempty"`
	RackFactor   float64 `json:"rack_factor,omitempty" yaml:"rack_factor,omitempty"`
	// SlotFactor is the factor when a job's GPUs sit in one machine but
	// span its slots (the Themis authors' third level; 1 when absent).
	// It must lie in [SpreadFactor, 1].
	SlotFactor float64 `json:"slot_factor,omitempty" yaml:"slot_factor,omitempty"`

	class, paperClass variability.Class
}

// Models maps model names (case-sensitive, as written in traces) to their
// iteration time and class.
type Models struct {
	byName map[string]*Model
	Map    ClassMap
}

type modelFile struct {
	Models []Model `yaml:"models"`
}

// modelLines is the same file read for where each model starts.
type modelLines struct {
	Models []yaml.Node `yaml:"models"`
}

var (
	// compiled on first use (an error to explain), not by every process
	unknownField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`field (\S+) not found in type \S+`) })
	wrongKind    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)")
	})
	yamlKinds = map[string]string{"map": "a mapping (key: value)", "seq": "a list (- item)", "str": "a string", "int": "a number", "float": "a number", "bool": "true or false", "null": "nothing"}
)

// modelFields lists a model row's keys, read from Model's tags so that
// the list cannot miss a field.
func modelFields() string {
	t := reflect.TypeFor[Model]()
	var names []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return strings.Join(names, ", ")
}

// yamlWords says a decoder message in YAML's terms rather than Go's.
// What the decoder copied from the input (a key, a tag, an anchor's name)
// is cut through quote, so that a line stays short whatever the file
// holds.
func yamlWords(l string) string {
	reworded := false
	l = unknownField().ReplaceAllStringFunc(l, func(s string) string {
		reworded = true
		key := unknownField().FindStringSubmatch(s)[1]
		return `unknown field "` + quote.Text(key) + `" (a model has ` + modelFields() + `)`
	})
	if m := wrongKind().FindStringSubmatch(l); m != nil {
		reworded = true
		want := "a mapping (key: value)"
		switch t := m[3]; {
		case strings.HasPrefix(t, "[]"):
			want = "a list (- item)"
		case t == "float64" || t == "*float64" || t == "int":
			want = "a number"
		case t == "string":
			want = "a string"
		}
		found := yamlKinds[m[1]]
		if found == "" {
			found = quote.Text(m[1])
		}
		if m[2] != "" {
			found += " " + strconv.Quote(m[2])
		}
		l = strings.Replace(l, m[0], "want "+want+", found "+found, 1)
	}
	if !reworded {
		l = quote.Message(l)
	}
	return l
}

// maxYAMLError is how long yamlError lets its lines grow before it only
// counts the rest: the decoder writes a line per bad field, and a file may
// have thousands.
const maxYAMLError = 1536

// yamlError rewords a YAML decoding error as file:line: message, the way
// every other input error reads.
func yamlError(name string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	var lines []string
	size := 0
	all := strings.Split(msg, "\n")
	for i, l := range all {
		l = yamlWords(strings.TrimSpace(l))
		if rest, ok := strings.CutPrefix(l, "line "); ok {
			if n, tail, ok := strings.Cut(rest, ": "); ok {
				l = fmt.Sprintf("%s:%s: %s", name, n, tail)
			}
		} else {
			l = name + ": " + l
		}
		if size += len(l) + 2; i > 0 && size > maxYAMLError {
			lines = append(lines, fmt.Sprintf("and %d more errors", len(all)-i))
			break
		}
		lines = append(lines, l)
	}
	return fmt.Errorf("%s", strings.Join(lines, "; "))
}

// DefaultModels is the built-in table, workload/models.yaml, with the
// artifact class map. It is built from builtinModels, the file's rows
// written out as Go (models_builtin.go, which TestBuiltinModels checks
// against the file and rewrites with -update), so that a process reading
// only the built-in table runs no YAML parser: parsing the file was about
// a millisecond of a 17 ms simulation of a Sia-Philly trace, most of it
// the parser's code and data touched for the first time.
func DefaultModels() *Models {
	m, err := newModels("workload/models.yaml (built in)", builtinModels, nil)
	if err != nil {
		panic("built-in model table is invalid: " + err.Error())
	}
	return m
}

// MaxModelsBytes bounds a model table file (1 MiB, like the scheduler
// config): a row is a few hundred bytes.
const MaxModelsBytes = 1 << 20

// LoadModels reads a model table from a YAML file.
func LoadModels(path string) (*Models, error) {
	b, err := sizecap.ReadFile(path, MaxModelsBytes, "a model table")
	if err != nil {
		return nil, err
	}
	return ParseModels(path, b)
}

// ParseModels parses a model table. Unknown keys are rejected so that a
// misspelt field is not silently ignored.
func ParseModels(name string, b []byte) (*Models, error) {
	var f modelFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && err != io.EOF {
		return nil, yamlError(name, err)
	}
	if len(f.Models) == 0 {
		return nil, fmt.Errorf("%s: field \"models\": no models listed (want a list of name, iter_time_s, class)", name)
	}
	var at modelLines
	_ = yaml.Unmarshal(b, &at) // decoded above; only the lines are new
	lines := make([]int, len(at.Models))
	for i, n := range at.Models {
		lines[i] = n.Line
	}
	return newModels(name, f.Models, lines)
}

// newModels checks a table's rows and indexes them by name; lines[i], if
// there, is the line where row i starts in the file called name.
func newModels(name string, rows []Model, lines []int) (*Models, error) {
	m := &Models{byName: map[string]*Model{}, Map: ClassMapArtifact}
	for i := range rows {
		md := rows[i]
		where := fmt.Sprintf("%s: models[%d]", name, i)
		if i < len(lines) {
			where = fmt.Sprintf("%s:%d: models[%d]", name, lines[i], i)
		}
		if md.Name == "" {
			return nil, fmt.Errorf("%s: field \"name\" is empty", where)
		}
		if _, dup := m.byName[md.Name]; dup {
			return nil, fmt.Errorf("%s: field \"name\": model %s listed twice", where, quote.Value(md.Name))
		}
		if !(md.IterTime > 0) || math.IsInf(md.IterTime, 0) {
			return nil, fmt.Errorf("%s (%s): field \"iter_time_s\" must be a positive number, got %v", where, quote.Text(md.Name), md.IterTime)
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"migration_cost_s", md.MigrationCost}, {"preemption_cost_s", md.PreemptionCost}} {
			if f.v != nil && (!(*f.v >= 0) || math.IsInf(*f.v, 0)) {
				return nil, fmt.Errorf("%s (%s): field %s must be finite seconds >= 0, got %v", where, quote.Text(md.Name), quote.Value(f.name), *f.v)
			}
		}
		c, err := variability.ParseClass(md.Class)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): field \"class\": %v", where, quote.Text(md.Name), err)
		}
		md.class = c
		if md.SpreadFactor == 0 {
			md.SpreadFactor = 1
		}
		if !(md.SpreadFactor > 0 && md.SpreadFactor <= 1) {
			return nil, fmt.Errorf("%s (%s): field \"spread_factor\" must be in (0, 1], got %v", where, quote.Text(md.Name), md.SpreadFactor)
		}
		if md.RackFactor == 0 {
			md.RackFactor = md.SpreadFactor
		}
		if !(md.RackFactor > 0 && md.RackFactor <= md.SpreadFactor) {
			return nil, fmt.Errorf("%s (%s): field \"rack_factor\" must be in (0, spread_factor %v], got %v", where, quote.Text(md.Name), md.SpreadFactor, md.RackFactor)
		}
		if md.SlotFactor == 0 {
			md.SlotFactor = 1
		}
		if !(md.SlotFactor >= md.SpreadFactor && md.SlotFactor <= 1) {
			return nil, fmt.Errorf("%s (%s): field \"slot_factor\" must be in [spread_factor %v, 1], got %v", where, quote.Text(md.Name), md.SpreadFactor, md.SlotFactor)
		}
		if md.PaperClass == "" {
			md.paperClass = c
		} else if md.paperClass, err = variability.ParseClass(md.PaperClass); err != nil {
			return nil, fmt.Errorf("%s (%s): field \"paper_class\": %v", where, quote.Text(md.Name), err)
		}
		m.byName[md.Name] = &md
	}
	return m, nil
}

// WithClassMap returns a copy that assigns classes by the given map.
func (m *Models) WithClassMap(cm ClassMap) *Models {
	c := *m
	c.Map = cm
	return &c
}

// Lookup returns a model's iteration time and class under the table's map.
func (m *Models) Lookup(name string) (iterTime float64, class variability.Class, ok bool) {
	md, ok := m.byName[name]
	if !ok {
		return 0, 0, false
	}
	if m.Map == ClassMapPaper {
		return md.IterTime, md.paperClass, true
	}
	return md.IterTime, md.class, true
}

// Sensitivity is a model's placement sensitivity: throughput factors
// across machines and across racks (1, 1 for an unknown model).
func (m *Models) Sensitivity(name string) (spread, rack float64) {
	md, ok := m.byName[name]
	if !ok {
		return 1, 1
	}
	return md.SpreadFactor, md.RackFactor
}

// SlotFactor is a model's throughput factor across a machine's slots (1
// for an unknown model).
func (m *Models) SlotFactor(name string) float64 {
	md, ok := m.byName[name]
	if !ok {
		return 1
	}
	return md.SlotFactor
}

// Names lists the known models, sorted.
func (m *Models) Names() []string {
	out := make([]string, 0, len(m.byName))
	for n := range m.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (m *Models) knownList() string { return strings.Join(m.Names(), ", ") }
