package selfcontained

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rule is one kind of reference a reader of the checkout cannot follow.
type rule struct {
	name string
	re   *regexp.Regexp
}

// The patterns are assembled from pieces so that this file does not
// match itself.
var rules = []rule{
	{"a path to the notes outside the checkout", regexp.MustCompile(`\.\./` + `shared\b|\bshared` + `/docs\b`)},
	{"a note that is not in the checkout", regexp.MustCompile(`\bTHEMIS` + `-HIVED\b`)},
	{"an issue reference", regexp.MustCompile(`\b[Ii]ssues? #?[0-9]+\b|\b[Tt]he ` + `issue's\b`)},
}

// hexToken is a candidate commit id: 7 to 40 hex digits standing alone
// (not inside a UUID, a longer word or a number).
var hexToken = regexp.MustCompile(`[0-9a-f]{7,40}`)

// upperDoc is a reference to a capitalised Markdown file (README.md,
// TESTDATA.md); such a file must exist in the checkout.
var upperDoc = regexp.MustCompile(`\b[A-Z][A-Z0-9_-]+\.md\b`)

// commitIDs finds the hex tokens of a line that read as commit ids: a
// mix of digits and letters, not part of a hyphenated or longer word.
func commitIDs(line string) []string {
	var out []string
	for _, loc := range hexToken.FindAllStringIndex(line, -1) {
		a, b := loc[0], loc[1]
		if a > 0 && isWordOrDash(line[a-1]) || b < len(line) && isWordOrDash(line[b]) {
			continue
		}
		tok := line[a:b]
		if strings.ContainsAny(tok, "abcdef") && strings.ContainsAny(tok, "0123456789") {
			out = append(out, tok)
		}
	}
	return out
}

func isWordOrDash(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// scanned says whether a file is prose, help or code a reader reads:
// Markdown, Go (comments, help texts and strings alike), shell, YAML,
// templates and the CI script. Data files (CSV, JSON traces, GPU UUIDs)
// are not.
func scanned(path string) bool {
	switch filepath.Ext(path) {
	case ".md", ".go", ".sh", ".yaml", ".yml", ".tmpl", ".tpl", ".txt":
		return true
	}
	base := filepath.Base(path)
	return base == "Dockerfile" || base == "Makefile" || strings.HasPrefix(path, ".ci/")
}

// exempt are files that may name upstream commits: the data provenance
// pins the external repositories our embedded data came from, which is
// how a reader verifies it; nothing there points into this project's
// history or notes.
func exempt(path string) bool {
	return strings.HasPrefix(path, "data/PROVENANCE")
}

// repoFiles lists the checkout's files relative to its root: git's
// tracked and untracked-but-not-ignored files when git is there, else a
// walk that skips dot directories other than .ci.
func repoFiles(t *testing.T, root string) []string {
	if out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if _, err := os.Stat(filepath.Join(root, f)); err == nil {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && rel != "." && strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// findings scans one file's text and returns "file:line: what" lines.
func findings(path string, text []byte, docs map[string]bool) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, r := range rules {
			if m := r.re.FindString(line); m != "" {
				out = append(out, fmt.Sprintf("%s:%d: %s (%q)", path, n, r.name, m))
			}
		}
		if !exempt(path) {
			for _, id := range commitIDs(line) {
				out = append(out, fmt.Sprintf("%s:%d: a commit id (%q)", path, n, id))
			}
		}
		for _, m := range upperDoc.FindAllString(line, -1) {
			if !docs[m] {
				out = append(out, fmt.Sprintf("%s:%d: %s is not a file of the checkout", path, n, m))
			}
		}
	}
	return out
}

// TestNothingPointsOutsideTheCheckout scans every document, help text,
// comment and string of the checkout and fails naming file:line for each
// reference a reader of a fresh clone could not follow.
func TestNothingPointsOutsideTheCheckout(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := repoFiles(t, root)
	docs := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".md") {
			docs[filepath.Base(f)] = true
		}
	}
	if !docs["README.md"] || len(files) < 100 {
		t.Fatalf("found %d files under %s, no README.md: not the checkout", len(files), root)
	}
	n := 0
	var bad []string
	for _, f := range files {
		if !scanned(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		n++
		bad = append(bad, findings(f, b, docs)...)
	}
	if n < 100 {
		t.Fatalf("scanned only %d files", n)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The scanner finds each kind of reference and leaves look-alikes alone.
func TestFindings(t *testing.T) {
	text := strings.Join([]string{
		"see ../" + "shared/notes.md and " + "shared" + "/docs/X",
		"as THEMIS" + "-HIVED says",
		"fixed in " + "Iss" + "ue 12, and iss" + "ue #3; the " + "issue's target",
		"measured at `" + "95a9" + "c79` against " + "f7989" + "a1e",
		"GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02 1.0000001 12345678 deadbeefs cafe123_x",
		"read NOTES" + ".md and README.md",
	}, "\n")
	got := findings("f.go", []byte(text), map[string]bool{"README.md": true})
	want := []string{
		`f.go:1: a path to the notes outside the checkout ("../` + `shared")`,
		`f.go:2: a note that is not in the checkout ("THEMIS` + `-HIVED")`,
		`f.go:3: an issue reference ("Iss` + `ue 12")`,
		`f.go:4: a commit id ("95a9` + `c79")`,
		`f.go:4: a commit id ("f7989` + `a1e")`,
		`f.go:6: NOTES` + `.md is not a file of the checkout`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := findings("data/PROVENANCE.md", []byte("commit 8a5907"+"0"), nil); len(got) != 0 {
		t.Errorf("provenance: %v", got)
	}
}
