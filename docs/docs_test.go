package docs

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/internal/doctest"
)

// dry checks the pages' directives and figures without running anything
// (go test ./docs -dry -v lists every block), for whoever edits a page.
var dry = flag.Bool("dry", false, "check directives and figures only; run no command")

// pages are the documents whose commands are run: the README and every
// page under docs/.
func pages(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocumentedCommands runs every ```sh block of the README and docs/
// and checks what the page says of it (see internal/doctest): a command
// that stops working, or a quoted figure that stops matching, fails here.
func TestDocumentedCommands(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []doctest.Block
	var quotes []doctest.Quote
	for _, f := range pages(t, root) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		bs, err := doctest.Parse(rel, src)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
		qs, err := doctest.Quotes(rel, src)
		if err != nil {
			t.Fatal(err)
		}
		quotes = append(quotes, qs...)
	}
	if len(blocks) == 0 {
		t.Fatalf("found %d documented commands; the pages were not read", len(blocks))
	}
	tests := testNames(t, root)
	bin, work := t.TempDir(), workdir(t, root)
	if !*dry {
		for _, cmd := range binaries {
			build := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "./cmd/"+cmd)
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build ./cmd/%s: %v\n%s", cmd, err, out)
			}
		}
	}
	before := untracked(root)
	defer func() {
		for _, f := range untracked(root) {
			if !slices.Contains(before, f) {
				t.Errorf("a documented command wrote %s into the checkout (the scratch directory links to it): write somewhere else", f)
			}
		}
	}()
	// A script that two pages document word for word (the README and
	// the reproduction guide both start with the quick reproduction) runs
	// once: the second block reads the first one's output, and its files
	// are in the shared scratch directory already.
	ran := map[string]string{}
	outs := map[string]string{}
	for _, b := range blocks {
		t.Run(fmt.Sprintf("%s:%d", b.File, b.Line), func(t *testing.T) {
			checkFigures(t, b)
			if b.Kind == doctest.Skip {
				if !tests[b.Test] {
					t.Fatalf("%s:%d: skipped for %s, but no test of that name exists", b.File, b.Line, b.Test)
				}
				return
			}
			if b.Slow && os.Getenv("PAL_DOCS_SLOW") != "1" {
				t.Skipf("%s:%d takes minutes: run with PAL_DOCS_SLOW=1 (CI does, in its own step)", b.File, b.Line)
			}
			script, ok := shell(b)
			if *dry {
				t.Logf("%s:%d %s: %q", b.File, b.Line, b.Kind, script)
				return
			}
			if !ok {
				return // only the README's test command: the suite itself
			}
			key := sameScript(script)
			if first, ok := ran[key]; ok {
				t.Logf("%s:%d is %s's command: its output is read again, not made again", b.File, b.Line, first)
				check(t, b, outs[key])
				return
			}
			start := time.Now()
			limit := 15 * time.Minute
			if b.Slow {
				// The full reproduction is the longest block: 25 minutes
				// on an idle 2-core machine (the PAL grids, HiveD, stale
				// profiles and Themis, one after the other); the limit
				// guards against a hang, not against a busy machine.
				limit = 50 * time.Minute
			}
			out, err := runScript(script, bin, work, limit)
			if err != nil {
				t.Fatalf("%s:%d: %v\n%s\n%s", b.File, b.Line, err, script, tail(out))
			}
			t.Logf("%s:%d ran in %.1fs", b.File, b.Line, time.Since(start).Seconds())
			ran[key], outs[key] = fmt.Sprintf("%s:%d", b.File, b.Line), out
			check(t, b, out)
		})
	}
	// The figures quoted away from any block, after the blocks have
	// written what they write.
	for _, q := range quotes {
		t.Run(fmt.Sprintf("%s:%d", q.File, q.Line), func(t *testing.T) { checkQuote(t, q, work) })
	}
}

// checkQuote: a paragraph's figures are each in the files its directive
// names (see doctest.Quotes), or the directive says why they are not ours
// to compare.
func checkQuote(t *testing.T, q doctest.Quote, work string) {
	switch q.Kind {
	case doctest.Unchecked:
		t.Fatalf("%s:%d: quotes %s, which nothing checks: put the command that prints it in a sh block before the paragraph, or a directive before it (figures FILE, timing, cited \"SOURCE\", derived \"HOW\", inputs, example; see internal/doctest)", q.File, q.Line, strings.Join(q.Figures, " "))
	case doctest.FromFiles:
	default:
		return
	}
	if q.Slow && os.Getenv("PAL_DOCS_SLOW") != "1" {
		t.Skipf("%s:%d: its figures are in files a slow block writes (PAL_DOCS_SLOW=1)", q.File, q.Line)
	}
	var nums []string
	for _, f := range q.Files {
		src, err := os.ReadFile(filepath.Join(work, f))
		if err != nil {
			if *dry {
				t.Skipf("%s:%d: %s is written by a block, and -dry runs none", q.File, q.Line, f)
			}
			t.Fatalf("%s:%d: the figures' file %s: %v (commit it, or let a block before the paragraph write it)", q.File, q.Line, f, err)
		}
		nums = append(nums, doctest.Numbers(string(src))...)
	}
	for _, f := range q.Figures {
		if !doctest.Matches(f, nums) {
			t.Errorf("%s:%d: quotes %s, which is in none of %s", q.File, q.Line, f, strings.Join(q.Files, ", "))
		}
	}
}

// untracked lists the checkout's untracked files (nil outside git).
func untracked(root string) []string {
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var files []string
	for _, l := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(l, "?? "); ok {
			files = append(files, f)
		}
	}
	return files
}

// testNames lists every Test function of the module (a skipped block must
// name one that exists).
func testNames(t *testing.T, root string) map[string]bool {
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			if d != nil && d.IsDir() && p != root {
				return filepath.SkipDir
			}
			return err
		}
		if strings.HasSuffix(p, "_test.go") {
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllSubmatch(src, -1) {
				names[string(m[1])] = true
			}
		}
		return nil
	})
	return names
}

// workdir is a scratch directory that sees the checkout's files through
// links (see doctest.LinkCheckout).
func workdir(t *testing.T, root string) string {
	dir := t.TempDir()
	if err := doctest.LinkCheckout(root, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// binaries are the commands the pages run, built once: `go run ./cmd/NAME`
// in a page is the built NAME.
var binaries = []string{"pal", "pal-kube", "pal-reproduce"}

// shell turns a block into a bash script: `go run ./cmd/NAME` is the
// built NAME (goRunBuilt), a benchmark under a timing directive runs one
// iteration, and the README's test command (go test ./...) is not run
// from inside the tests.
func shell(b doctest.Block) (string, bool) {
	var lines []string
	for _, c := range b.Commands {
		cmd := goRunBuilt(c.Text)
		if strings.HasPrefix(cmd, "go test") {
			if !strings.Contains(cmd, "-bench") {
				continue
			}
			cmd += " -benchtime=1x -count=1"
		}
		lines = append(lines, cmd)
	}
	if len(lines) == 0 {
		return "", false
	}
	return "set -euo pipefail\n" + strings.Join(lines, "\n") + "\n", true
}

// sameScript is script without its lines' trailing comments (a space,
// then #) and runs of blanks: what bash runs, so two blocks that differ
// only in how they are annotated are one script.
func sameScript(script string) string {
	var lines []string
	for _, l := range strings.Split(script, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

func runScript(script, bin, work string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOBIN="+bin)
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s", limit)
	}
	return string(out), err
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// squash makes runs of spaces one and a Unicode minus a hyphen, so that a
// table's alignment and the page's typography do not matter.
func squash(s string) string {
	s = strings.ReplaceAll(s, "−", "-")
	return strings.Join(strings.Fields(s), " ")
}

// checkFigures: every figure the paragraph after a block quotes is one
// its directive checks (or, for a timing block, the paragraph says it is
// a measurement, not a promise).
func checkFigures(t *testing.T, b doctest.Block) {
	t.Helper()
	if len(b.Figures) == 0 {
		return
	}
	switch b.Kind {
	case doctest.Timing, doctest.Skip:
		return
	}
	// Prose writes 214,576.16 where a table prints 214576.16.
	plain := func(s string) string { return dropSeparators(squash(s)) }
	checked := plain(strings.Join(b.Expect, "\n") + "\n" + strings.Join(b.Want, "\n"))
	for _, f := range b.Figures {
		if !strings.Contains(checked, plain(f)) {
			t.Errorf("%s:%d: the paragraph after the block quotes %s, which the block's doctest directive does not check", b.File, b.ProseLine, f)
		}
	}
}

// dropSeparators removes the commas that separate thousands (a comma
// between digits).
func dropSeparators(s string) string {
	b := []byte(s)
	out := make([]byte, 0, len(b))
	for i, c := range b {
		if c == ',' && i > 0 && i+1 < len(b) && isDigit(b[i-1]) && isDigit(b[i+1]) {
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func check(t *testing.T, b doctest.Block, out string) {
	t.Helper()
	switch b.Kind {
	case doctest.Expect:
		got := squash(out)
		for _, e := range b.Expect {
			if !strings.Contains(got, squash(e)) {
				t.Errorf("%s:%d: output lacks %q:\n%s", b.File, b.Line, e, tail(out))
			}
		}
	case doctest.Output:
		if b.WantLang == "json" {
			var g, w any
			if err := json.Unmarshal([]byte(out), &g); err != nil {
				t.Fatalf("%s:%d: output is not JSON: %v\n%s", b.File, b.Line, err, tail(out))
			}
			if err := json.Unmarshal([]byte(strings.Join(b.Want, "\n")), &w); err != nil {
				t.Fatalf("%s:%d: the page's JSON: %v", b.File, b.Line, err)
			}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			if string(gj) != string(wj) {
				t.Errorf("%s:%d: prints\n%s\nthe page quotes\n%s", b.File, b.Line, gj, wj)
			}
			return
		}
		trim := func(ls []string) []string {
			ls = slices.Clone(ls)
			for k := range ls {
				ls[k] = strings.TrimRight(ls[k], " ")
			}
			return ls
		}
		got := trim(strings.Split(strings.TrimRight(out, "\n"), "\n"))
		want := trim(b.Want)
		if !slices.Equal(got, want) {
			t.Errorf("%s:%d: prints\n%s\nthe page quotes\n%s", b.File, b.Line, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestDocLinks: every relative link of the README and docs/ names a file
// of the checkout (a page moved or renamed leaves no dead link behind),
// and no page sends the reader outside the checkout.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range pages(t, root) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for n, line := range strings.Split(string(src), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				p := filepath.Join(filepath.Dir(f), target)
				if r, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("%s:%d: link %s leaves the checkout", rel, n+1, m[1])
					continue
				}
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s:%d: link %s: no such file", rel, n+1, m[1])
				}
			}
		}
	}
}

// goRunBuilt replaces the first `go run ./cmd/NAME` of a command with the
// built NAME, for each binary, the longest names first: ./cmd/pal is a
// prefix of ./cmd/pal-kube and ./cmd/pal-reproduce.
func goRunBuilt(cmd string) string {
	names := slices.Clone(binaries)
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, n := range names {
		cmd = strings.Replace(cmd, "go run ./cmd/"+n, n, 1)
	}
	return cmd
}

func TestGoRunBuilt(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"go run ./cmd/pal sim", "pal sim"},
		{"go run ./cmd/pal-kube scheduler", "pal-kube scheduler"},
		{"go run ./cmd/pal-reproduce --quick --out out", "pal-reproduce --quick --out out"},
		{"go run ./cmd/pal-reproduce themis && go run ./cmd/pal sim", "pal-reproduce themis && pal sim"},
		{"go run ./cmd/pal-kube forecast | go run ./cmd/pal trace", "pal-kube forecast | pal trace"},
		{"pal-reproduce hived --quick", "pal-reproduce hived --quick"},
		{"go test ./...", "go test ./..."},
	} {
		if got := goRunBuilt(tc.in); got != tc.want {
			t.Errorf("goRunBuilt(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
