package page

import (
	"regexp"
	"strings"
	"sync"
)

// A small Markdown reader for the summaries experiments write: enough for
// headings, paragraphs, bullet lists, pipe tables (as Table.WriteMarkdown
// writes them), fenced code, `code` and **bold**. It produces structure,
// not HTML, so html/template still escapes every piece of text; anything
// it does not understand shows as plain text rather than vanishing.

type mdBlock struct {
	Kind   string // h3..h6, p, ul, pre, table
	level  int    // of a heading, while parsing
	Inline []mdInline
	Items  [][]mdInline
	Code   string
	Header []mdCell
	Rows   [][]mdCell
}

type mdInline struct {
	Text       string
	Code, Bold bool
}

type mdCell struct {
	Inline []mdInline
	Right  bool
}

// The patterns compile on first use: compiled at start-up they cost
// every pal process (most never read markdown) about half a millisecond.
var (
	mdHeading   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`) })
	mdItem      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}[-*+]\s+(.*)$`) })
	mdSeparator = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*:?-+:?\s*$`) })
)

func parseMarkdown(src string) []mdBlock {
	var (
		out   []mdBlock
		para  []string
		items []string
		table []string
	)
	flush := func() {
		if len(para) > 0 {
			out = append(out, mdBlock{Kind: "p", Inline: parseInline(strings.Join(para, " "))})
			para = nil
		}
		if len(items) > 0 {
			b := mdBlock{Kind: "ul"}
			for _, it := range items {
				b.Items = append(b.Items, parseInline(it))
			}
			out = append(out, b)
			items = nil
		}
		if len(table) > 0 {
			out = append(out, parseMDTable(table))
			table = nil
		}
	}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "```"):
			flush()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			out = append(out, mdBlock{Kind: "pre", Code: strings.Join(code, "\n")})
		case trim == "":
			flush()
		case mdHeading().MatchString(trim):
			flush()
			m := mdHeading().FindStringSubmatch(trim)
			out = append(out, mdBlock{Kind: "h", level: len(m[1]), Inline: parseInline(m[2])})
		case strings.HasPrefix(trim, "|"):
			if len(table) == 0 {
				flush()
			}
			table = append(table, trim)
		case mdItem().MatchString(line):
			if len(items) == 0 {
				flush()
			}
			items = append(items, mdItem().FindStringSubmatch(line)[1])
		case len(items) > 0 && (line[0] == ' ' || line[0] == '\t'):
			items[len(items)-1] += " " + trim
		default:
			if len(items) > 0 || len(table) > 0 {
				flush()
			}
			para = append(para, trim)
		}
	}
	flush()
	// The section title is an h2, so the summary's top heading level,
	// whatever it is, becomes h3.
	top := 7
	for _, b := range out {
		if b.Kind == "h" {
			top = min(top, b.level)
		}
	}
	for i := range out {
		if out[i].Kind == "h" {
			out[i].Kind = "h" + string(rune('0'+min(out[i].level-top+3, 6)))
			out[i].level = 0
		}
	}
	return out
}

func parseMDTable(lines []string) mdBlock {
	b := mdBlock{Kind: "table"}
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = splitRow(l)
	}
	var right []bool
	if len(rows) >= 2 && isSeparator(rows[1]) {
		for _, c := range rows[1] {
			right = append(right, strings.HasSuffix(strings.TrimSpace(c), ":") && !strings.HasPrefix(strings.TrimSpace(c), ":"))
		}
		b.Header = cells(rows[0], right)
		rows = rows[2:]
	}
	for _, r := range rows {
		b.Rows = append(b.Rows, cells(r, right))
	}
	return b
}

func isSeparator(row []string) bool {
	for _, c := range row {
		if !mdSeparator().MatchString(c) {
			return false
		}
	}
	return len(row) > 0
}

func cells(row []string, right []bool) []mdCell {
	out := make([]mdCell, len(row))
	for j, c := range row {
		out[j] = mdCell{Inline: parseInline(strings.TrimSpace(c)), Right: j < len(right) && right[j]}
	}
	return out
}

// splitRow splits a pipe-table row on unescaped pipes.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(out, cur.String())
}

func parseInline(s string) []mdInline {
	var out []mdInline
	text := func(t string) {
		if t == "" {
			return
		}
		if n := len(out); n > 0 && !out[n-1].Code && !out[n-1].Bold {
			out[n-1].Text += t
			return
		}
		out = append(out, mdInline{Text: t})
	}
	for s != "" {
		i := strings.IndexAny(s, "`*")
		if i < 0 {
			text(s)
			break
		}
		text(s[:i])
		s = s[i:]
		switch {
		case s[0] == '`':
			if j := strings.IndexByte(s[1:], '`'); j >= 0 {
				out = append(out, mdInline{Text: s[1 : 1+j], Code: true})
				s = s[j+2:]
				continue
			}
		case strings.HasPrefix(s, "**"):
			if j := strings.Index(s[2:], "**"); j > 0 {
				out = append(out, mdInline{Text: s[2 : 2+j], Bold: true})
				s = s[j+4:]
				continue
			}
		}
		text(s[:1])
		s = s[1:]
	}
	return out
}
