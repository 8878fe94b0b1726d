// Package doctest reads the commands a Markdown document shows and what it
// says they print, so that a test can run every documented command and
// check every figure quoted beside it. Documentation that nobody runs
// drifts: a flag is renamed, a default changes, a calibration moves by a
// digit, and the page keeps quoting the old number.
//
// The convention, kept small so that the page still reads as prose:
//
//   - Every fenced block whose info string is sh is a list of commands,
//     one a line (a line ending in a backslash continues on the next;
//     lines starting with # are comments).
//   - An HTML comment right after the block (blank lines aside) says what
//     to check; it does not show when the page is rendered:
//     <!-- doctest: expect "214,576.16" "42.9%" --> the output contains
//     each string (runs of spaces count as one);
//     <!-- doctest: output --> the next fenced block is the whole output;
//     <!-- doctest: timing --> the command measures time: it is run
//     (benchmarks for one iteration) but its figures are not compared;
//     <!-- doctest: skip TestName --> the block needs something this
//     harness does not start (a cluster); TestName is the test that runs
//     it.
//   - A directive may start with the word slow (<!-- doctest: slow
//     expect ... -->): the block takes minutes (a full experiment), so
//     it runs only when the harness is asked for slow blocks (CI does).
//   - The figures quoted in the paragraph right after a block (numbers
//     with a decimal point, thousands separators, a percent or a times
//     sign) must each be one the block's directive checks.
package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// Kind is what a block's directive asks.
type Kind string

const (
	Run    Kind = ""       // no directive: the commands must succeed
	Expect Kind = "expect" // the output contains each of Block.Expect
	Output Kind = "output" // the output is Block.Want
	Timing Kind = "timing" // run, figures not compared
	Skip   Kind = "skip"   // run by the test Block.Test
)

// Command is one documented command line (continuations joined).
type Command struct {
	Line int
	Text string
}

// Block is one ```sh block and what the page says of it.
type Block struct {
	File     string
	Line     int // the opening fence
	Commands []Command
	Kind     Kind
	// Expect lists the strings an expect directive names.
	Expect []string
	// Want is the fenced block an output directive points to: its info
	// string and lines.
	WantLang string
	Want     []string
	// Test names the test that runs a skipped block.
	Test string
	// Slow: the block takes minutes; run only when asked.
	Slow bool
	// Prose is the paragraph right after the block (and its directive
	// and output), from line ProseLine; Figures are the figures it quotes.
	Prose     string
	ProseLine int
	Figures   []string
}

// Limits keep a crafted page from costing unbounded time or memory.
const (
	MaxBytes = 4 << 20
	MaxLine  = 64 << 10
)

// Parse reads a Markdown page. Errors name the file and line.
func Parse(file string, src []byte) ([]Block, error) {
	if len(src) > MaxBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a page may have", file, len(src), MaxBytes)
	}
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	for i, l := range lines {
		if len(l) > MaxLine {
			return nil, fmt.Errorf("%s:%d: line of %d bytes, more than %d", file, i+1, len(l), MaxLine)
		}
	}
	var blocks []Block
	for i := 0; i < len(lines); {
		fence, lang, ok := opening(lines[i])
		if !ok {
			i++
			continue
		}
		end, err := closing(file, lines, i, fence)
		if err != nil {
			return nil, err
		}
		if lang != "sh" {
			i = end + 1
			continue
		}
		b := Block{File: file, Line: i + 1}
		if b.Commands, err = commands(file, lines[i+1:end], i+2); err != nil {
			return nil, err
		}
		i = end + 1
		if i, err = b.directive(lines, i); err != nil {
			return nil, err
		}
		i = b.prose(lines, i)
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// opening reports whether l opens a fenced block: its fence (``` or
// longer, or ~~~) and info string.
func opening(l string) (fence, lang string, ok bool) {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return "", "", false
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			info := strings.TrimSpace(t[n:])
			if c == '`' && strings.Contains(info, "`") {
				return "", "", false
			}
			lang, _, _ = strings.Cut(info, " ")
			return t[:n], lang, true
		}
	}
	return "", "", false
}

// closing finds the line that closes the block opened at line open.
func closing(file string, lines []string, open int, fence string) (int, error) {
	for j := open + 1; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
			return j, nil
		}
	}
	return 0, fmt.Errorf("%s:%d: fenced block never closed", file, open+1)
}

func commands(file string, body []string, first int) ([]Command, error) {
	var out []Command
	var cur strings.Builder
	start := 0
	for k, l := range body {
		t := strings.TrimSpace(l)
		if cur.Len() == 0 {
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			start = first + k
		}
		if cont, ok := strings.CutSuffix(t, `\`); ok {
			cur.WriteString(strings.TrimSpace(cont) + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, Command{Line: start, Text: cur.String()})
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("%s:%d: command continues past the end of its block", file, start)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s:%d: sh block without a command", file, first-1)
	}
	return out, nil
}

var directiveRE = regexp.MustCompile(`^<!--\s*doctest:\s*(.*?)\s*-->$`)

// directive reads the block's directive, if the next non-blank line is
// one, and the output block it points to; it returns the line after.
func (b *Block) directive(lines []string, i int) (int, error) {
	j := skipBlank(lines, i)
	if j >= len(lines) {
		return i, nil
	}
	t := strings.TrimSpace(lines[j])
	if !strings.HasPrefix(t, "<!--") || !strings.Contains(t, "doctest") {
		return i, nil
	}
	slow, kind, rest, err := splitDirective(b.File, j+1, t)
	if err != nil {
		return 0, err
	}
	b.Slow = slow
	switch Kind(kind) {
	case Expect:
		b.Kind = Expect
		var err error
		if b.Expect, err = quoted(rest); err != nil {
			return 0, fmt.Errorf("%s:%d: expect: %v", b.File, j+1, err)
		}
		if len(b.Expect) == 0 {
			return 0, fmt.Errorf("%s:%d: expect names no string", b.File, j+1)
		}
	case Output:
		b.Kind = Output
		k := skipBlank(lines, j+1)
		fence, lang, ok := "", "", false
		if k < len(lines) {
			fence, lang, ok = opening(lines[k])
		}
		if !ok {
			return 0, fmt.Errorf("%s:%d: output: no fenced block follows", b.File, j+1)
		}
		end, err := closing(b.File, lines, k, fence)
		if err != nil {
			return 0, err
		}
		b.WantLang, b.Want = lang, lines[k+1:end]
		return end + 1, nil
	case Timing:
		b.Kind = Timing
	case Skip:
		b.Kind = Skip
		if !regexp.MustCompile(`^Test[A-Za-z0-9_]+$`).MatchString(rest) {
			return 0, fmt.Errorf("%s:%d: skip must name the test that runs the block (skip TestName), got %s", b.File, j+1, quote.Value(rest))
		}
		b.Test = rest
	default:
		return 0, fmt.Errorf("%s:%d: unknown doctest directive %s after a block (expect, output, timing or skip; the block's directive checks that paragraph, so a paragraph's own directive cannot stand here)", b.File, j+1, quote.Value(kind))
	}
	return j + 1, nil
}

// splitDirective reads `<!-- doctest: [slow] KIND REST -->`.
func splitDirective(file string, line int, t string) (slow bool, kind, rest string, err error) {
	m := directiveRE.FindStringSubmatch(t)
	if m == nil {
		return false, "", "", fmt.Errorf("%s:%d: doctest directive must be one line: <!-- doctest: KIND ... -->", file, line)
	}
	kind, rest, _ = strings.Cut(m[1], " ")
	if kind == "slow" {
		slow = true
		kind, rest, _ = strings.Cut(strings.TrimSpace(rest), " ")
	}
	return slow, kind, strings.TrimSpace(rest), nil
}

// quoted splits `"a" "b c"` into its strings (\" and \\ escape).
func quoted(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] != '"' {
			return nil, fmt.Errorf("want a quoted string at %s", quote.Value(s))
		}
		var b strings.Builder
		k := 1
		for ; k < len(s) && s[k] != '"'; k++ {
			if s[k] == '\\' && k+1 < len(s) {
				k++
			}
			b.WriteByte(s[k])
		}
		if k >= len(s) {
			return nil, fmt.Errorf("unterminated string %s", quote.Text(s))
		}
		if b.Len() == 0 {
			return nil, fmt.Errorf("empty string")
		}
		out = append(out, b.String())
		s = s[k+1:]
	}
	return out, nil
}

func skipBlank(lines []string, i int) int {
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	return i
}

// prose reads the paragraph after the block and its figures; it returns
// where the paragraph starts (the parser resumes there: a paragraph may
// itself hold nothing else to read, and a fence ends it).
func (b *Block) prose(lines []string, i int) int {
	j := skipBlank(lines, i)
	var p []string
	k := j
	if j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "<!--") {
		k = len(lines) // the paragraph has a directive of its own (see Quotes)
	}
	for ; k < len(lines); k++ {
		t := strings.TrimSpace(lines[k])
		if t == "" || strings.HasPrefix(t, "#") {
			break
		}
		if _, _, ok := opening(lines[k]); ok {
			break
		}
		p = append(p, t)
	}
	b.Prose, b.ProseLine = strings.Join(p, " "), j+1
	b.Figures = Figures(b.Prose)
	return j
}

// figureRE matches what a page quotes as a result: a number with a
// decimal point or thousands separators, or any number with a percent or
// times sign. Bare small integers (counts, sizes in flags) are not
// figures.
var figureRE = regexp.MustCompile(`[−-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+)(?:\s?%|×|x\b)?`)

// Figures lists the figures quoted in s, in order, outside `code spans`
// (a flag value such as --rate 0.5 is an input, not a result).
func Figures(s string) []string {
	var out []string
	for k, part := range strings.Split(s, "`") {
		if k%2 == 1 {
			continue
		}
		for _, ix := range figureRE.FindAllStringIndex(part, -1) {
			m := part[ix[0]:ix[1]]
			if rest := part[ix[1]:]; len(rest) > 1 && rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' {
				continue // a version (1.37.2), not a figure
			}
			if ix[0] > 0 && part[ix[0]-1] == 'v' || afterProduct(part[:ix[0]]) {
				continue
			}
			if isFigure(m) {
				out = append(out, strings.TrimLeft(strings.ReplaceAll(m, " ", ""), "−-"))
			}
		}
	}
	return out
}

// products whose name before a number makes it a version (Kubernetes
// 1.37), not a figure.
var products = []string{"Kubernetes ", "kube-apiserver ", "kube-scheduler ", "Go ", "kwok ", "etcd ", "helm ", "Helm "}

func afterProduct(before string) bool {
	for _, p := range products {
		if strings.HasSuffix(before, p) {
			return true
		}
	}
	return false
}

func isFigure(m string) bool {
	return strings.ContainsAny(m, ".,%×") || strings.HasSuffix(m, "x")
}

// LinkCheckout fills dir with a link to every top-level entry of the
// checkout at root (but .git), so that a page's commands see the
// checkout's files by their relative paths while what they write lands
// in dir.
func LinkCheckout(root, dir string) error {
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
