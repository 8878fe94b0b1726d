package variability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// SampleMode says how simulated GPUs get their raw values from profiles.
type SampleMode int

const (
	// WithReplacement is what the artifact does: every (GPU, class) pair
	// draws one row uniformly from all normalised rows, GPUs in id order
	// and classes A, B, C, D within each GPU. Rows can repeat.
	WithReplacement SampleMode = iota
	// WithoutReplacement is what the paper describes: within a class no row
	// is used twice until all rows have been used. When the cluster has
	// more GPUs than the profile has rows, the pool is refilled with all
	// rows and drawing continues, so each row is used at most
	// ceil(GPUs/rows) times; this keeps huge simulated clusters possible
	// with small profiles instead of failing.
	WithoutReplacement
	// ByUUID is the real-cluster path: each GPU's value is the median of
	// its own rows, looked up by the GPU's UUID.
	ByUUID
)

func (m SampleMode) String() string {
	switch m {
	case WithReplacement:
		return "with"
	case WithoutReplacement:
		return "without"
	case ByUUID:
		return "uuid"
	}
	return fmt.Sprintf("SampleMode(%d)", int(m))
}

// ParseSampleMode accepts "with", "without" and "uuid" (plus the longer
// spellings "with-replacement", "without-replacement", "by-uuid").
func ParseSampleMode(s string) (SampleMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "with", "with-replacement", "replacement", "artifact":
		return WithReplacement, nil
	case "without", "without-replacement", "paper":
		return WithoutReplacement, nil
	case "uuid", "by-uuid", "byuuid":
		return ByUUID, nil
	}
	return 0, fmt.Errorf("unknown sampling mode %s (want with, without or uuid)", quote.Value(s))
}

// MaxGPUs bounds the clusters Assign builds, so that a typo in a cluster
// size fails with an error rather than exhausting memory.
const MaxGPUs = 1 << 24

// Assign builds the raw value table of an nGPUs cluster. rng drives the
// random modes and must be seeded by the caller so that runs repeat; it is
// unused (and may be nil) for ByUUID, which instead needs uuids[g] for
// every GPU.
func Assign(profiles map[Class]*Profile, nGPUs int, mode SampleMode, rng *rand.Rand, uuids []string) (*Table, error) {
	if nGPUs <= 0 || nGPUs > MaxGPUs {
		return nil, fmt.Errorf("need between 1 and %d GPUs, got %d", MaxGPUs, nGPUs)
	}
	var norm [NumClasses][]float64
	for c := range Class(NumClasses) {
		p := profiles[c]
		if p == nil || len(p.norm) == 0 {
			return nil, fmt.Errorf("no profile for class %s", c)
		}
		norm[c] = p.norm
	}
	t := &Table{}
	for c := range t.Values {
		t.Values[c] = make([]float64, nGPUs)
	}
	switch mode {
	case WithReplacement:
		if rng == nil {
			return nil, errors.New("sampling needs a random generator")
		}
		for g := range nGPUs {
			for c := range NumClasses {
				t.Values[c][g] = norm[c][rng.IntN(len(norm[c]))]
			}
		}
	case WithoutReplacement:
		if rng == nil {
			return nil, errors.New("sampling needs a random generator")
		}
		// A partial Fisher-Yates shuffle per class, advanced one draw at a
		// time in the same GPU-major order as WithReplacement, so the two
		// modes consume the generator alike.
		var pool [NumClasses][]int
		var used [NumClasses]int
		for c := range pool {
			pool[c] = identity(len(norm[c]))
		}
		for g := range nGPUs {
			for c := range NumClasses {
				p := pool[c]
				if used[c] == len(p) {
					used[c] = 0 // refill: every row is available again
				}
				j := used[c] + rng.IntN(len(p)-used[c])
				p[used[c]], p[j] = p[j], p[used[c]]
				t.Values[c][g] = norm[c][p[used[c]]]
				used[c]++
			}
		}
	case ByUUID:
		if len(uuids) != nGPUs {
			return nil, fmt.Errorf("by-uuid assignment needs one uuid per GPU: got %d uuids for %d GPUs", len(uuids), nGPUs)
		}
		medians := map[*Profile]map[string]float64{}
		for c := range Class(NumClasses) {
			p := profiles[c]
			m, ok := medians[p]
			if !ok {
				m = p.ByUUID()
				medians[p] = m
			}
			for g, u := range uuids {
				v, ok := m[u]
				if !ok {
					return nil, fmt.Errorf("GPU %d: uuid %s has no rows in profile %s (class %s)", g, quote.Value(u), p.Name, c)
				}
				t.Values[c][g] = v
			}
		}
	default:
		return nil, fmt.Errorf("unknown sampling mode %v", mode)
	}
	return t, nil
}

func identity(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
