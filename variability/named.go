package variability

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/palsched/pal/data"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/internal/sizecap"
)

// namedProfiles maps a cluster name to the embedded file of each class.
// longhorn is the artifact's profiles.json: class C reuses the BERT file of
// class B. frontera follows the same pattern with the Frontera files. ls6
// only has ResNet data, so every class gets it; runs on it show the
// variability of a compute-bound job everywhere.
var namedProfiles = map[string][NumClasses]string{
	"longhorn": {
		"variability/longhorn/resnet-longhorn-agg.csv",
		"variability/longhorn/bert-longhorn-agg.csv",
		"variability/longhorn/bert-longhorn-agg.csv",
		"variability/longhorn/pagerank-longhorn-agg.csv",
	},
	"frontera": {
		"variability/frontera/frontera-resnet-agg.csv",
		"variability/frontera/frontera-bert-agg.csv",
		"variability/frontera/frontera-bert-agg.csv",
		"variability/frontera/frontera-pagerank-agg.csv",
	},
	"ls6": {
		"variability/ls6/resnet-ls6-agg.csv",
		"variability/ls6/resnet-ls6-agg.csv",
		"variability/ls6/resnet-ls6-agg.csv",
		"variability/ls6/resnet-ls6-agg.csv",
	},
}

// DefaultProfile is the profile set the artifact's simulations use.
const DefaultProfile = "longhorn"

// KnownProfiles lists the names LoadNamed accepts, sorted.
func KnownProfiles() []string {
	names := make([]string, 0, len(namedProfiles))
	for n := range namedProfiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Parsed embedded files are cached: a sweep builds many clusters from the
// same profiles, and Profiles are immutable once read.
var (
	embeddedMu    sync.Mutex
	embeddedCache = map[string]*Profile{}
)

func loadEmbedded(p string) (*Profile, error) {
	embeddedMu.Lock()
	defer embeddedMu.Unlock()
	if pr, ok := embeddedCache[p]; ok {
		return pr, nil
	}
	f, err := data.Variability.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pr, err := ReadProfile(path.Base(p), f)
	if err != nil {
		return nil, err
	}
	embeddedCache[p] = pr
	return pr, nil
}

// LoadNamed returns the embedded profile of every class for a cluster
// name (see KnownProfiles). Classes that share a file share the *Profile.
func LoadNamed(name string) (map[Class]*Profile, error) {
	files, ok := namedProfiles[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("unknown variability profile %s (known: %s)", quote.Value(name), strings.Join(KnownProfiles(), ", "))
	}
	out := make(map[Class]*Profile, NumClasses)
	for c, f := range files {
		p, err := loadEmbedded(f)
		if err != nil {
			return nil, fmt.Errorf("profile %s class %s: %w", name, Class(c), err)
		}
		out[Class(c)] = p
	}
	return out, nil
}

// LoadProfileSet resolves a user's --profile argument. It accepts, in
// this order:
//   - a known name (LoadNamed);
//   - a JSON file mapping "classA".."classD" to CSV paths, the artifact's
//     profiles.json format; relative paths are taken from the JSON file's
//     directory;
//   - a directory holding such a profiles.json;
//   - a single CSV file, used for all four classes (as ls6 is).
func LoadProfileSet(spec string) (map[Class]*Profile, error) {
	if _, ok := namedProfiles[strings.ToLower(strings.TrimSpace(spec))]; ok {
		return LoadNamed(spec)
	}
	st, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("variability profile %s is neither a known name (%s) nor a readable path: %w",
			quote.Value(spec), strings.Join(KnownProfiles(), ", "), err)
	}
	if st.IsDir() {
		return loadProfileJSON(filepath.Join(spec, "profiles.json"))
	}
	if strings.EqualFold(filepath.Ext(spec), ".json") {
		return loadProfileJSON(spec)
	}
	p, err := readProfileFile(spec)
	if err != nil {
		return nil, err
	}
	out := make(map[Class]*Profile, NumClasses)
	for c := range Class(NumClasses) {
		out[c] = p
	}
	return out, nil
}

func loadProfileJSON(file string) (map[Class]*Profile, error) {
	raw, err := sizecap.ReadFile(file, 1<<20, "a profile map (an object of four file names)")
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: want an object mapping classA..classD to CSV files: %w", file, err)
	}
	files := map[Class]string{}
	for k, v := range m {
		c, err := ParseClass(k)
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", file, quote.Value(k), err)
		}
		files[c] = v
	}
	for c := range Class(NumClasses) {
		if _, ok := files[c]; !ok {
			return nil, fmt.Errorf("%s: no file for class%s", file, c)
		}
	}
	out := make(map[Class]*Profile, NumClasses)
	byPath := map[string]*Profile{}
	for c := range Class(NumClasses) {
		f := files[c]
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(file), f)
		}
		if p, ok := byPath[f]; ok {
			out[c] = p
			continue
		}
		p, err := readProfileFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: class%s: %w", file, c, err)
		}
		byPath[f] = p
		out[c] = p
	}
	return out, nil
}

func readProfileFile(file string) (*Profile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadProfile(filepath.Base(file), f)
}
