// Package layering reads the module's package map (docs/packages.md) and
// checks the code's imports against it: every package sits in one layer,
// imports only from its own layer or the ones below, and the few rules
// that layers alone cannot say (which packages may build on the
// simulator's options) hold too. The check runs as this package's test,
// so an import that breaks the layering fails `go test ./...`, and a
// package missing from the map (or a map entry with no package) fails it
// as well, so the map cannot go stale.
package layering

import (
	"bufio"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// Map is the package map: each package's layer, by its path relative to
// the module ("." for the root).
type Map struct {
	// Layer is each package's layer number (0 is the lowest).
	Layer map[string]int
	// Names are the layers' names, by number.
	Names map[int]string
}

var (
	layerHead   = regexp.MustCompile("^## Layer ([0-9]+): (.+)$")
	packageHead = regexp.MustCompile("^### `([^`]+)`$")
)

// ReadMap reads a package map: `## Layer N: name` headings, each followed
// by `### ` + "`path`" headings, one per package. name names the
// source in errors, which give its line.
func ReadMap(name string, r io.Reader) (*Map, error) {
	m := &Map{Layer: map[string]int{}, Names: map[int]string{}}
	sc := bufio.NewScanner(r)
	layer, line := -1, 0
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), " ")
		if g := layerHead.FindStringSubmatch(s); g != nil {
			n, err := strconv.Atoi(g[1])
			if err != nil || n > 100 {
				return nil, fmt.Errorf("%s:%d: layer number %s is not a small integer", name, line, quote.Value(g[1]))
			}
			if _, dup := m.Names[n]; dup {
				return nil, fmt.Errorf("%s:%d: layer %d named twice", name, line, n)
			}
			if n <= layer {
				return nil, fmt.Errorf("%s:%d: layer %d after layer %d: list the layers from the lowest up", name, line, n, layer)
			}
			layer = n
			m.Names[n] = g[2]
			continue
		}
		if g := packageHead.FindStringSubmatch(s); g != nil {
			if layer < 0 {
				return nil, fmt.Errorf("%s:%d: package %s before any layer heading", name, line, quote.Text(g[1]))
			}
			if l, dup := m.Layer[g[1]]; dup {
				return nil, fmt.Errorf("%s:%d: package %s listed twice (first in layer %d)", name, line, quote.Text(g[1]), l)
			}
			m.Layer[g[1]] = layer
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(m.Layer) == 0 {
		return nil, fmt.Errorf("%s: no packages (want `## Layer N: name` headings with a `### `+\"`path`\"+` heading per package)", name)
	}
	return m, nil
}

// Package is one package of the module and what it imports from the
// module, by path relative to the module root.
type Package struct {
	Path string
	// Imports are the module packages its non-test files import;
	// TestImports those its test files (internal and external) import.
	Imports, TestImports []string
}

// Scan lists the module's packages under root (the directory holding
// go.mod) with their imports of module packages. Directories named
// testdata, vendor, or starting with . or _ are skipped, as the go tool
// skips them.
func Scan(root string) ([]Package, error) {
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	ctx := build.Default
	// The integration tests build only under their tag; they are part of
	// the tree all the same.
	ctx.BuildTags = append(slices.Clone(ctx.BuildTags), "integration")
	var out []Package
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		n := d.Name()
		if path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		p, err := ctx.ImportDir(path, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		pkg := Package{Path: filepath.ToSlash(rel)}
		pkg.Imports = local(mod, p.Imports)
		pkg.TestImports = local(mod, append(slices.Clone(p.TestImports), p.XTestImports...))
		out = append(out, pkg)
		return nil
	})
	return out, err
}

func local(mod string, imports []string) []string {
	var out []string
	for _, im := range imports {
		if im == mod {
			out = append(out, ".")
		} else if rest, ok := strings.CutPrefix(im, mod+"/"); ok {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for i, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			if p := strings.Trim(strings.TrimSpace(rest), `"`); p != "" {
				return p, nil
			}
			return "", fmt.Errorf("%s:%d: empty module path", gomod, i+1)
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// Rules are the checks beyond the layers' order.
type Rules struct {
	// Options is the package of the simulator's options and presets;
	// OptionsUsers are the only packages that may import it (a path
	// ending in /... covers the subtree), each with the reason.
	Options      string
	OptionsUsers map[string]string
	// Drivers must not import each other, Options, or the paper
	// experiments (Experiments, with its subtree), tests included.
	Drivers     []string
	Experiments string
	// The rooms are the packages below Experiments, one per experiment:
	// a room never imports another room (what they share lives in the
	// RoomBases: the paper convention, the parameter grids).
	RoomBases []string
}

// Check returns every violation, one sentence each, in package order: a
// package missing from the map or mapped but absent, an import from a
// lower layer to a higher one, and a broken rule.
func Check(m *Map, pkgs []Package, r Rules) []string {
	var bad []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.Path] = true
		if _, ok := m.Layer[p.Path]; !ok {
			bad = append(bad, fmt.Sprintf("package %s is not in the package map", p.Path))
		}
	}
	var mapped []string
	for p := range m.Layer {
		if !seen[p] {
			mapped = append(mapped, p)
		}
	}
	slices.Sort(mapped)
	for _, p := range mapped {
		bad = append(bad, fmt.Sprintf("the package map lists %s, which is not a package", p))
	}
	for _, p := range pkgs {
		l, ok := m.Layer[p.Path]
		for _, im := range p.Imports {
			il, iok := m.Layer[im]
			if ok && iok && il > l {
				bad = append(bad, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s): an import from a lower layer to a higher one",
					p.Path, l, m.Names[l], im, il, m.Names[il]))
			}
			if im == r.Options && !covered(p.Path, r.OptionsUsers) {
				bad = append(bad, fmt.Sprintf("%s imports %s: only %s may build on the simulator's options", p.Path, r.Options, users(r.OptionsUsers)))
			}
		}
		if strings.HasPrefix(p.Path, r.Experiments+"/") && !slices.Contains(r.RoomBases, p.Path) {
			for _, im := range p.Imports {
				if strings.HasPrefix(im, r.Experiments+"/") && !slices.Contains(r.RoomBases, im) && im != p.Path {
					bad = append(bad, fmt.Sprintf("room %s imports room %s: the paper experiments share only %s", p.Path, im, roomBase(r)))
				}
			}
		}
		if slices.Contains(r.Drivers, p.Path) {
			for _, im := range append(slices.Clone(p.Imports), p.TestImports...) {
				switch {
				case im == r.Options:
					bad = append(bad, fmt.Sprintf("driver %s imports %s: a driver builds its policies from policy/registry, not from the simulator's options", p.Path, im))
				case im == r.Experiments || strings.HasPrefix(im, r.Experiments+"/"):
					bad = append(bad, fmt.Sprintf("driver %s imports %s: the paper experiments sit above the drivers", p.Path, im))
				case im != p.Path && slices.Contains(r.Drivers, im):
					bad = append(bad, fmt.Sprintf("driver %s imports driver %s: the drivers share the core, not each other", p.Path, im))
				}
			}
		}
	}
	slices.Sort(bad)
	return slices.Compact(bad)
}

func covered(path string, allowed map[string]string) bool {
	for a := range allowed {
		if a == path {
			return true
		}
		if base, ok := strings.CutSuffix(a, "/..."); ok && (path == base || strings.HasPrefix(path, base+"/")) {
			return true
		}
	}
	return false
}

func users(allowed map[string]string) string {
	var s []string
	for a := range allowed {
		s = append(s, a)
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

func roomBase(r Rules) string {
	if len(r.RoomBases) == 0 {
		return "the layers below them"
	}
	return strings.Join(r.RoomBases, ", ") + " and the layers below them"
}
