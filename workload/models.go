package workload

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/variability"
)

//go:embed models.yaml
var defaultModels []byte

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
	return "", fmt.Errorf("--class-map %q: want artifact or paper", s)
}

// Model is one row of the model table.
type Model struct {
	Name       string  `json:"name"`
	IterTime   float64 `json:"iter_time_s"`
	Class      string  `json:"class"`
	PaperClass string  `json:"paper_class"`
	// MigrationCost and PreemptionCost, if given, price this model's
	// moves in place of --migration-cost and --preemption-cost (seconds
	// of lost progress; see MoveCost).
	MigrationCost  *float64 `json:"migration_cost_s,omitempty"`
	PreemptionCost *float64 `json:"preemption_cost_s,omitempty"`

	class, paperClass variability.Class
}

// Models maps model names (case-sensitive, as written in traces) to their
// iteration time and class.
type Models struct {
	byName map[string]*Model
	Map    ClassMap
}

type modelFile struct {
	Models []Model `json:"models"`
}

// DefaultModels is the embedded table with the artifact class map.
func DefaultModels() *Models {
	m, err := ParseModels("models.yaml (embedded)", defaultModels)
	if err != nil {
		panic("embedded model table is invalid: " + err.Error())
	}
	return m
}

// LoadModels reads a model table from a YAML file.
func LoadModels(path string) (*Models, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseModels(path, b)
}

// ParseModels parses a model table. Unknown keys are rejected so that a
// misspelt field is not silently ignored.
func ParseModels(name string, b []byte) (*Models, error) {
	var f modelFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(f.Models) == 0 {
		return nil, fmt.Errorf("%s: field \"models\": no models listed", name)
	}
	m := &Models{byName: map[string]*Model{}, Map: ClassMapArtifact}
	for i := range f.Models {
		md := f.Models[i]
		where := fmt.Sprintf("%s: models[%d]", name, i)
		if md.Name == "" {
			return nil, fmt.Errorf("%s: field \"name\" is empty", where)
		}
		if _, dup := m.byName[md.Name]; dup {
			return nil, fmt.Errorf("%s: field \"name\": model %q listed twice", where, md.Name)
		}
		if !(md.IterTime > 0) || math.IsInf(md.IterTime, 0) {
			return nil, fmt.Errorf("%s (%s): field \"iter_time_s\" must be a positive number, got %v", where, md.Name, md.IterTime)
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"migration_cost_s", md.MigrationCost}, {"preemption_cost_s", md.PreemptionCost}} {
			if f.v != nil && (!(*f.v >= 0) || math.IsInf(*f.v, 0)) {
				return nil, fmt.Errorf("%s (%s): field %q must be finite seconds >= 0, got %v", where, md.Name, f.name, *f.v)
			}
		}
		c, err := variability.ParseClass(md.Class)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): field \"class\": %v", where, md.Name, err)
		}
		md.class = c
		if md.PaperClass == "" {
			md.paperClass = c
		} else if md.paperClass, err = variability.ParseClass(md.PaperClass); err != nil {
			return nil, fmt.Errorf("%s (%s): field \"paper_class\": %v", where, md.Name, err)
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
