package doctest

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// A page quotes figures in places no command block stands beside: a table
// of results, a paragraph that sums up an experiment, the load a benchmark
// ran under. Such a paragraph (or table, or list: a run of non-blank lines
// outside fenced blocks) carries a directive on the line before it that
// says where its figures come from:
//
//   - <!-- doctest: figures PATH... --> every figure is in one of the
//     files: a record committed with the page (the raw output of a
//     benchmark that takes too long to run here), or a file an earlier
//     block wrote into the scratch directory (out/summary.md after
//     pal-reproduce --out out). A figure matches a number of the file
//     quoted at the figure's precision: 29,337 matches 29337.12, 83%
//     matches 0.831 or 83.1, 1.48× matches 1.4812.
//   - <!-- doctest: slow figures PATH... --> the same, for files only a
//     slow block writes (checked when the slow blocks run).
//   - <!-- doctest: timing --> the figures are times or loads measured on
//     one machine at one moment; the page names the command that measures
//     them, and they are not compared.
//   - <!-- doctest: cited "SOURCE" --> the figures are another work's (a
//     paper's claim, a peer's configuration), not ours to compute.
//   - <!-- doctest: inputs --> the figures are inputs, sizes, limits or
//     defaults a reader chooses or the program enforces, not results.
//   - <!-- doctest: example --> the figures illustrate a definition (a
//     score of 1.2 is 20% slower), not a result.
//   - <!-- doctest: derived "HOW" --> the figures are worked out by hand
//     from a record (ratios of a log's counts); HOW says from what, so a
//     reader can redo it. Prefer figures, which a test compares.
//
// A paragraph with figures and none of these, that is not the paragraph
// right after a block (which its block's directive checks), is an
// unchecked quote: a test fails on it.

// QuoteKind says how a quote's figures are checked.
type QuoteKind string

const (
	Unchecked QuoteKind = ""        // no directive
	FromFiles QuoteKind = "figures" // found in Quote.Files
	Timed     QuoteKind = "timing"  // measurements, not compared
	Cited     QuoteKind = "cited"   // another work's figures
	Inputs    QuoteKind = "inputs"  // inputs and limits, not results
	Example   QuoteKind = "example" // a definition's illustration
	Derived   QuoteKind = "derived" // worked out by hand from a record
)

// Quote is a paragraph outside any block's reach that quotes figures.
type Quote struct {
	File    string
	Line    int // the paragraph's first line
	Kind    QuoteKind
	Files   []string // for FromFiles
	Source  string   // for Cited and Derived
	Slow    bool
	Text    string
	Figures []string
}

// Quotes lists the paragraphs of a page that quote figures and are not the
// prose right after a sh block, with the directive before each. Errors
// name the file and line.
func Quotes(file string, src []byte) ([]Quote, error) {
	blocks, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	prose := map[int]bool{}
	for _, b := range blocks {
		prose[b.ProseLine] = true
	}
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	var out []Quote
	var pending *Quote // a directive waiting for its paragraph
	pendingLine := 0
	for i := 0; i < len(lines); {
		t := strings.TrimSpace(lines[i])
		if fence, lang, ok := opening(lines[i]); ok {
			end, err := closing(file, lines, i, fence)
			if err != nil {
				return nil, err
			}
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: the directive's paragraph is a fenced block; a figures directive goes before a paragraph or table", file, pendingLine)
			}
			i = end + 1
			// A sh block's own directive (and an output block) follow it.
			if j := skipBlank(lines, i); lang == "sh" && j < len(lines) && directiveRE.MatchString(strings.TrimSpace(lines[j])) {
				i = j + 1
				if k := skipBlank(lines, i); k < len(lines) && strings.Contains(lines[j], "output") {
					if f2, _, ok := opening(lines[k]); ok {
						if e2, err := closing(file, lines, k, f2); err == nil {
							i = e2 + 1
						}
					}
				}
			}
			continue
		}
		if t == "" {
			i++
			continue
		}
		if strings.HasPrefix(t, "<!--") && strings.Contains(t, "doctest") {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: two directives before one paragraph", file, i+1)
			}
			q, err := quoteDirective(file, i+1, t)
			if err != nil {
				return nil, err
			}
			pending, pendingLine = &q, i+1
			i++
			continue
		}
		if strings.HasPrefix(t, "<!--") {
			i++ // another comment: not a paragraph
			continue
		}
		if strings.HasPrefix(t, "#") {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a directive before a heading; put it before the paragraph it checks", file, pendingLine)
			}
			i++
			continue
		}
		// A paragraph: up to a blank line, a heading or a fence.
		start := i
		var p []string
		for ; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "<!--") {
				break
			}
			if _, _, ok := opening(lines[i]); ok {
				break
			}
			p = append(p, l)
		}
		text := strings.Join(p, " ")
		q := Quote{File: file, Line: start + 1}
		if pending != nil {
			q = *pending
			q.Line = start + 1
			pending = nil
		}
		q.Text, q.Figures = text, Figures(text)
		if prose[start+1] {
			if q.Kind != Unchecked {
				return nil, fmt.Errorf("%s:%d: this paragraph follows a block, whose directive checks it; drop the directive before it", file, pendingLine)
			}
			continue
		}
		if len(q.Figures) == 0 && q.Kind != Unchecked {
			return nil, fmt.Errorf("%s:%d: a doctest directive before a paragraph that quotes no figure", file, pendingLine)
		}
		if len(q.Figures) > 0 {
			out = append(out, q)
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a doctest directive with no paragraph after it", file, pendingLine)
	}
	return out, nil
}

func quoteDirective(file string, line int, t string) (Quote, error) {
	slow, kind, rest, err := splitDirective(file, line, t)
	if err != nil {
		return Quote{}, err
	}
	q := Quote{File: file, Slow: slow}
	switch QuoteKind(kind) {
	case FromFiles:
		q.Kind = FromFiles
		q.Files = strings.Fields(rest)
		if len(q.Files) == 0 {
			return Quote{}, fmt.Errorf("%s:%d: figures names no file", file, line)
		}
		for _, f := range q.Files {
			if strings.HasPrefix(f, "/") || strings.HasPrefix(f, "..") || strings.Contains(f, "/../") {
				return Quote{}, fmt.Errorf("%s:%d: figures: %s must be a path inside the scratch directory", file, line, quote.Text(f))
			}
		}
	case Timed, Inputs, Example:
		q.Kind = QuoteKind(kind)
		if rest != "" {
			return Quote{}, fmt.Errorf("%s:%d: %s takes nothing after it, got %s", file, line, kind, quote.Value(rest))
		}
	case Cited, Derived:
		q.Kind = QuoteKind(kind)
		s, err := quoted(rest)
		if err != nil || len(s) != 1 {
			return Quote{}, fmt.Errorf("%s:%d: %s names its source as one quoted string", file, line, kind)
		}
		q.Source = s[0]
	default:
		return Quote{}, fmt.Errorf("%s:%d: unknown doctest directive %s before a paragraph (figures, timing, cited, derived, inputs or example)", file, line, quote.Value(kind))
	}
	if q.Slow && q.Kind != FromFiles {
		return Quote{}, fmt.Errorf("%s:%d: only figures can be slow", file, line)
	}
	return q, nil
}

var (
	numberRE    = regexp.MustCompile(`\d+(?:,\d+)*(?:\.\d+)?`)
	thousandsRE = regexp.MustCompile(`^\d{1,3}(?:,\d{3})+(?:\.\d+)?$`)
)

// Numbers lists the numbers of a file's text, each with the digits it was
// printed with. A comma between digits is read both ways, since a file
// may be prose (1,005,095) or CSV (1,2.4960): as a thousands separator
// where the groups allow it, and as a field separator always.
func Numbers(text string) []string {
	var out []string
	for _, m := range numberRE.FindAllString(text, -1) {
		if !strings.Contains(m, ",") {
			out = append(out, m)
			continue
		}
		if thousandsRE.MatchString(m) {
			out = append(out, strings.ReplaceAll(m, ",", ""))
		}
		out = append(out, strings.Split(m, ",")...)
	}
	return out
}

// Matches reports whether figure f (as Figures gives it: 29,337, 83%,
// 1.48×) is one of nums quoted at f's precision; a percent also matches a
// fraction (0.831 is 83%).
func Matches(f string, nums []string) bool {
	v := strings.TrimRight(strings.ReplaceAll(f, ",", ""), "%×x")
	pct := strings.HasSuffix(f, "%")
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		return false
	}
	dec := 0
	if _, frac, ok := strings.Cut(v, "."); ok {
		dec = len(frac)
	}
	round := func(x float64) string { return strconv.FormatFloat(x, 'f', dec, 64) }
	for _, n := range nums {
		x, err := strconv.ParseFloat(n, 64)
		if err != nil || math.IsInf(x, 0) {
			continue
		}
		if round(x) == v && precise(n, dec) {
			return true
		}
		if pct && round(100*x) == v && precise(n, dec+2) {
			return true
		}
	}
	return false
}

// precise: n was printed with at least dec decimals, so rounding it to
// dec is quoting it (0.8 does not stand for 0.83).
func precise(n string, dec int) bool {
	_, frac, _ := strings.Cut(n, ".")
	return len(frac) >= dec
}
