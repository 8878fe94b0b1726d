// Command mutate plants one bug (a mutant) at a time in the working tree,
// runs the tests that should notice it and puts the file back: a mutant a
// test fails on is killed, one every test passes survived and points at a
// missing test. Run it through hack/mutate.sh; docs/testing.md says how.
//
// A mutant is a literal replacement in one file, given on the command
// line (FILE[:LINE] OLD NEW; without LINE, OLD must occur exactly once in
// the file), a unified diff (-patch, applied with git apply), or a list of
// either kind (-batch). The tests run are the mutated package's own, then
// those of every package that imports it (in its code or its tests), then
// the integration tests -integration names, stopping at the first
// failure. A mutant that does not compile is reported as invalid and left
// out of the rates.
//
// The mutated files are always restored: on return, on an interrupt, and,
// should the process be killed, from the backup kept under the temporary
// directory, which the next run puts back before anything else.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// mutant is one planted change.
type mutant struct {
	where string // FILE[:LINE] or the patch file, for the report
	file  string // file to change (literal mutants)
	line  int    // 0: anywhere in the file, once
	old   string
	new   string
	patch string // unified diff (patch mutants)
}

func (m mutant) String() string {
	if m.patch != "" {
		return "patch " + m.where
	}
	return fmt.Sprintf("%s %q -> %q", m.where, m.old, m.new)
}

// outcome is what the tests made of one mutant.
type outcome struct {
	m       mutant
	pkg     string // module-relative package directory
	verdict string // killed, survived, invalid
	by      string // package and test names that failed (killed), or why invalid
	took    time.Duration
}

type runner struct {
	root, module string
	short        bool
	integration  string
	importers    bool
	timeout      string
	verbose      bool
	// imported is, for each package import path, the packages whose code
	// or tests import it.
	imported map[string][]string

	mu      sync.Mutex
	backups map[string][]byte // absolute path -> original content
	journal string            // directory holding the on-disk backups
}

func main() {
	var (
		patch       = flag.String("patch", "", "apply this unified diff as the mutant")
		batch       = flag.String("batch", "", "run every mutant listed in this file (see docs/testing.md for the format)")
		short       = flag.Bool("short", false, "run the tests with -short")
		integration = flag.String("integration", "", "also run these integration tests (a -run pattern) against mutants the unit tests miss")
		importers   = flag.Bool("importers", true, "also run the tests of the packages importing the mutated one")
		timeout     = flag.String("timeout", "10m", "go test -timeout for each package")
		verbose     = flag.Bool("v", false, "print each go test command")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: hack/mutate.sh [flags] FILE[:LINE] OLD NEW\n       hack/mutate.sh [flags] -patch FILE.diff\n       hack/mutate.sh [flags] -batch LIST\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	r, err := newRunner()
	if err != nil {
		fatal(err)
	}
	r.short, r.integration, r.importers, r.timeout, r.verbose = *short, *integration, *importers, *timeout, *verbose

	var ms []mutant
	switch {
	case *batch != "":
		if flag.NArg() != 0 || *patch != "" {
			fatal(errors.New("-batch takes no other mutant"))
		}
		ms, err = readBatch(*batch)
	case *patch != "":
		if flag.NArg() != 0 {
			fatal(errors.New("-patch takes no other mutant"))
		}
		var b []byte
		b, err = os.ReadFile(*patch)
		ms = []mutant{{where: *patch, patch: string(b)}}
	case flag.NArg() == 3:
		var m mutant
		m, err = literal(flag.Arg(0), flag.Arg(1), flag.Arg(2))
		ms = []mutant{m}
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fatal(err)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sig
		r.restore()
		fmt.Fprintf(os.Stderr, "mutate: %v: files restored\n", s)
		os.Exit(130)
	}()

	var outs []outcome
	for _, m := range ms {
		o := r.run(m)
		outs = append(outs, o)
		fmt.Println(o.line())
	}
	if len(outs) > 1 {
		summary(os.Stdout, outs)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}

func newRunner() (*runner, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("run it inside the module")
	}
	r := &runner{root: filepath.Dir(gomod), backups: map[string][]byte{}}
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	r.module = strings.TrimSpace(string(mod))
	sum := sha256.Sum256([]byte(r.root))
	r.journal = filepath.Join(os.TempDir(), "pal-mutate-"+hex.EncodeToString(sum[:6]))
	if err := r.recover(); err != nil {
		return nil, err
	}
	return r, nil
}

// recover puts back files a killed earlier run left mutated.
func (r *runner) recover() error {
	ents, err := os.ReadDir(r.journal)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(r.journal, e.Name()))
		if err != nil {
			return err
		}
		path, content, ok := bytes.Cut(b, []byte{0})
		if !ok {
			continue
		}
		if err := os.WriteFile(string(path), content, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "mutate: restored %s, left mutated by an earlier run\n", path)
		os.Remove(filepath.Join(r.journal, e.Name()))
	}
	return nil
}

// readBatch reads a mutant list: one mutant a line, either
//
//	FILE[:LINE] OLD => NEW
//
// (OLD and NEW literal, surrounding spaces trimmed; write a leading or
// trailing space as \s, a tab as \t) or
//
//	patch FILE.diff
//
// Blank lines and lines starting with # are skipped.
func readBatch(path string) ([]mutant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []mutant
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if p, ok := strings.CutPrefix(line, "patch "); ok {
			p = strings.TrimSpace(p)
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(path), p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			ms = append(ms, mutant{where: p, patch: string(b)})
			continue
		}
		where, rest, ok := strings.Cut(line, " ")
		old, nw, ok2 := strings.Cut(rest, " => ")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%s:%d: want FILE[:LINE] OLD => NEW or patch FILE", path, n)
		}
		m, err := literal(where, unescape(strings.TrimSpace(old)), unescape(strings.TrimSpace(nw)))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		ms = append(ms, m)
	}
	return ms, sc.Err()
}

func unescape(s string) string {
	return strings.NewReplacer(`\s`, " ", `\t`, "\t", `\\`, `\`).Replace(s)
}

func literal(where, old, nw string) (mutant, error) {
	m := mutant{where: where, file: where, old: old, new: nw}
	if f, l, ok := strings.Cut(where, ":"); ok {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return m, fmt.Errorf("%s: bad line number", where)
		}
		m.file, m.line = f, n
	}
	if old == "" || old == nw {
		return m, fmt.Errorf("%s: OLD must be non-empty and differ from NEW", where)
	}
	return m, nil
}

// apply plants m and returns the files it changed (absolute paths).
func (r *runner) apply(m mutant) ([]string, error) {
	if m.patch != "" {
		cmd := exec.Command("git", "apply", "--numstat", "-")
		cmd.Dir, cmd.Stdin = r.root, strings.NewReader(m.patch)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git apply --numstat: %w", err)
		}
		var files []string
		for l := range strings.Lines(string(out)) {
			if f := strings.Fields(l); len(f) == 3 {
				files = append(files, filepath.Join(r.root, f[2]))
			}
		}
		for _, f := range files {
			if err := r.backup(f); err != nil {
				return files, err
			}
		}
		cmd = exec.Command("git", "apply", "-")
		cmd.Dir, cmd.Stdin = r.root, strings.NewReader(m.patch)
		if out, err := cmd.CombinedOutput(); err != nil {
			return files, fmt.Errorf("git apply: %v: %s", err, out)
		}
		return files, nil
	}
	path := m.file
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.root, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(src), "\n")
	at := -1 // line index of the one match
	for i, l := range lines {
		if m.line != 0 && i != m.line-1 {
			continue
		}
		switch c := strings.Count(l, m.old); {
		case c == 0:
		case c > 1 || at >= 0:
			return nil, fmt.Errorf("%s: %q occurs more than once; give FILE:LINE or more context", m.where, m.old)
		default:
			at = i
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("%s: %q not found", m.where, m.old)
	}
	lines[at] = strings.Replace(lines[at], m.old, m.new, 1)
	if err := r.backup(path); err != nil {
		return nil, err
	}
	return []string{path}, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
}

// backup keeps path's content in memory and in the journal.
func (r *runner) backup(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.backups[path]; ok {
		return nil
	}
	if err := os.MkdirAll(r.journal, 0o700); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(path))
	j := filepath.Join(r.journal, hex.EncodeToString(sum[:8]))
	if err := os.WriteFile(j, append(append([]byte(path), 0), b...), 0o600); err != nil {
		return err
	}
	r.backups[path] = b
	return nil
}

// restore puts every backed-up file back and clears the journal.
func (r *runner) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for path, b := range r.backups {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mutate: cannot restore %s: %v (its original is in %s)\n", path, err, r.journal)
			continue
		}
		sum := sha256.Sum256([]byte(path))
		os.Remove(filepath.Join(r.journal, hex.EncodeToString(sum[:8])))
	}
	clear(r.backups)
}

var failLine = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)

// run plants m, runs the tests and restores the tree.
func (r *runner) run(m mutant) (o outcome) {
	o.m = m
	start := time.Now()
	defer func() {
		r.restore()
		o.took = time.Since(start).Round(time.Second)
	}()
	files, err := r.apply(m)
	switch {
	case len(files) > 0:
		o.pkg = r.rel(filepath.Dir(files[0]))
	case m.file != "":
		o.pkg = filepath.Dir(filepath.Clean(m.file))
	}
	if err != nil {
		o.verdict, o.by = "invalid", err.Error()
		return
	}
	var pkgs []string
	for _, f := range files {
		p := r.importPath(filepath.Dir(f))
		if !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	// A mutant that does not build is no test's business.
	args := append([]string{"vet"}, pkgs...)
	if out, err := r.goCmd(args...); err != nil {
		o.verdict, o.by = "invalid", "does not build: "+firstLine(out)
		return
	}
	suites := slices.Clone(pkgs)
	if r.importers {
		for _, p := range pkgs {
			for _, q := range r.importersOf(p) {
				if !slices.Contains(suites, q) {
					suites = append(suites, q)
				}
			}
		}
	}
	for _, p := range suites {
		args := []string{"test", "-count=1", "-timeout", r.timeout}
		if r.short {
			args = append(args, "-short")
		}
		out, err := r.goCmd(append(args, p)...)
		if err != nil {
			o.verdict, o.by = "killed", r.rel(strings.TrimPrefix(p, r.module+"/"))+": "+failures(out)
			return
		}
	}
	if r.integration != "" {
		out, err := r.goCmd("test", "-count=1", "-tags", "integration", "-timeout", r.timeout, "-run", r.integration, "./test/integration/")
		if err != nil {
			o.verdict, o.by = "killed", "test/integration: "+failures(out)
			return
		}
	}
	o.verdict = "survived"
	return
}

func (r *runner) goCmd(args ...string) (string, error) {
	if r.verbose {
		fmt.Fprintln(os.Stderr, "+ go", strings.Join(args, " "))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = r.root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// failures names the failed tests in go test's output (or its first line
// when no test failed, e.g. a build error or a panic in init).
func failures(out string) string {
	var names []string
	for l := range strings.Lines(out) {
		if s := failLine.FindStringSubmatch(l); s != nil && !slices.Contains(names, s[1]) {
			names = append(names, s[1])
		}
	}
	// A parent test fails with its subtests; keep the deepest names.
	var keep []string
	for _, n := range names {
		if !slices.ContainsFunc(names, func(m string) bool { return strings.HasPrefix(m, n+"/") }) {
			keep = append(keep, n)
		}
	}
	if len(keep) == 0 {
		if strings.Contains(out, "panic:") {
			return "panic"
		}
		return firstLine(out)
	}
	if len(keep) > 4 {
		keep = append(keep[:4], fmt.Sprintf("and %d more", len(keep)-4))
	}
	return strings.Join(keep, ", ")
}

func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return strings.TrimSpace(s)
}

func (r *runner) rel(dir string) string {
	if rel, err := filepath.Rel(r.root, dir); err == nil {
		return rel
	}
	return dir
}

func (r *runner) importPath(dir string) string {
	rel := r.rel(dir)
	if rel == "." {
		return r.module
	}
	return r.module + "/" + filepath.ToSlash(rel)
}

// importersOf lists the module's packages whose code or tests import p.
func (r *runner) importersOf(p string) []string {
	if r.imported == nil {
		r.imported = map[string][]string{}
		out, err := r.goCmd("list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./...")
		if err != nil {
			fatal(fmt.Errorf("go list: %v: %s", err, firstLine(out)))
		}
		for l := range strings.Lines(out) {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			for _, imp := range f[1:] {
				if strings.HasPrefix(imp, r.module) && imp != f[0] && !slices.Contains(r.imported[imp], f[0]) {
					r.imported[imp] = append(r.imported[imp], f[0])
				}
			}
		}
	}
	return r.imported[p]
}

func (o outcome) line() string {
	s := fmt.Sprintf("%-8s %s (%s)", strings.ToUpper(o.verdict), o.m, o.took)
	if o.by != "" {
		s += "\n         " + map[string]string{"killed": "by ", "invalid": ""}[o.verdict] + o.by
	}
	return s
}

// summary prints, per package, the valid mutants and how many survived.
func summary(w *os.File, outs []outcome) {
	type row struct{ killed, survived, invalid int }
	rows := map[string]*row{}
	for _, o := range outs {
		p := cmp.Or(o.pkg, "?")
		if rows[p] == nil {
			rows[p] = &row{}
		}
		switch o.verdict {
		case "killed":
			rows[p].killed++
		case "survived":
			rows[p].survived++
		default:
			rows[p].invalid++
		}
	}
	names := make([]string, 0, len(rows))
	for p := range rows {
		names = append(names, p)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "\n%-24s %7s %6s %8s %8s %9s\n", "package", "mutants", "killed", "survived", "invalid", "survival")
	var t row
	for _, p := range names {
		x := rows[p]
		t.killed += x.killed
		t.survived += x.survived
		t.invalid += x.invalid
		fmt.Fprintf(w, "%-24s %7d %6d %8d %8d %9s\n", p, x.killed+x.survived, x.killed, x.survived, x.invalid, rate(x.survived, x.killed+x.survived))
	}
	fmt.Fprintf(w, "%-24s %7d %6d %8d %8d %9s\n", "all", t.killed+t.survived, t.killed, t.survived, t.invalid, rate(t.survived, t.killed+t.survived))
}

func rate(a, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(n))
}
