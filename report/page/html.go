// Package page writes a reproduction's HTML index: one self-contained
// page of prose, figures saved beside it, tables and Markdown summaries.
// It is its own package so that what links only report's tables (every
// pal command) does not link html/template and its package inits.
package page

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/palsched/pal/report"
)

// Section is one part of an HTML index: prose, figures saved by a Drawer
// into the index's directory, tables and an optional Markdown summary.
type Section struct {
	Title string
	// Text is prose; blank lines separate paragraphs.
	Text string
	// Figures are base names as given to a Drawer, optionally under a
	// subdirectory of the index's directory ("hived/anomaly-1x"). Each is
	// shown as its PNG, linked to its SVG, before the section's tables.
	Figures []string
	// Captions optionally describe figures by base name; a figure without
	// one is captioned with its name.
	Captions map[string]string
	Tables   []*report.Table
	// Markdown is a summary (such as one written by Table.WriteMarkdown)
	// shown as simple HTML: headings, paragraphs, lists, pipe tables and
	// code blocks, with `code` and **bold** inline.
	Markdown string
}

// IndexFile is the name WriteIndex gives the page.
const IndexFile = "index.html"

// WriteIndex writes dir/index.html, a single page that needs nothing but
// the figures beside it: no scripts, no remote styles or fonts, so it
// opens the same from a CI artifact, a laptop or a browser test. Every
// figure's PNG and SVG must already exist in dir, so that a misspelt base
// name fails here rather than as a broken image.
func WriteIndex(dir, title string, sections []Section) error {
	page := indexPage{Title: title}
	for i, s := range sections {
		ps := pageSection{ID: fmt.Sprintf("s%d", i+1), Title: s.Title, Paragraphs: paragraphs(s.Text)}
		for _, base := range s.Figures {
			if err := checkFigureRef(base); err != nil {
				return fmt.Errorf("report: section %q: %v", s.Title, err)
			}
			for _, ext := range []string{".png", ".svg"} {
				if _, err := os.Stat(filepath.Join(dir, base+ext)); err != nil {
					return fmt.Errorf("report: section %q: figure %q: %v (save it with a Drawer into %s first)", s.Title, base, err, dir)
				}
			}
			caption := s.Captions[base]
			if caption == "" {
				caption = base
			}
			ps.Figures = append(ps.Figures, pageFigure{PNG: base + ".png", SVG: base + ".svg", Caption: caption})
		}
		for _, t := range s.Tables {
			ps.Tables = append(ps.Tables, htmlTable(t))
		}
		ps.Markdown = parseMarkdown(s.Markdown)
		page.Sections = append(page.Sections, ps)
	}
	var buf bytes.Buffer
	if err := indexTemplate().Execute(&buf, page); err != nil {
		return fmt.Errorf("report: rendering %s: %v", IndexFile, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, IndexFile), buf.Bytes(), 0o644)
}

// checkFigureRef accepts a figure base name, optionally below the index's
// directory: forward slashes only, no "..", nothing absolute.
func checkFigureRef(ref string) error {
	parts := strings.Split(ref, "/")
	for _, p := range parts[:len(parts)-1] {
		if p == "" || p == "." || p == ".." || strings.Contains(p, `\`) {
			return fmt.Errorf("report: figure %q: want a base name, optionally under a subdirectory of the index's directory", ref)
		}
	}
	return report.CheckFigureName(parts[len(parts)-1])
}

type indexPage struct {
	Title    string
	Sections []pageSection
}

type pageSection struct {
	ID, Title  string
	Paragraphs []string
	Figures    []pageFigure
	Tables     []pageTable
	Markdown   []mdBlock
}

type pageFigure struct{ PNG, SVG, Caption string }

type pageTable struct {
	Title   string
	Headers []pageCell
	Rows    [][]pageCell
}

type pageCell struct {
	Text string
	Num  bool
}

func htmlTable(t *report.Table) pageTable {
	num := t.NumericColumns()
	pt := pageTable{Title: t.Title}
	headers := make([]string, len(num)) // every column, headed or not
	copy(headers, t.Headers)
	for j, h := range headers {
		pt.Headers = append(pt.Headers, pageCell{h, num[j]})
	}
	for _, r := range t.Cells() {
		row := make([]pageCell, len(r))
		for j, c := range r {
			row[j] = pageCell{c, num[j]}
		}
		pt.Rows = append(pt.Rows, row)
	}
	return pt
}

func paragraphs(text string) []string {
	var out []string
	for p := range strings.SplitSeq(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, strings.Join(strings.Fields(p), " "))
		}
	}
	return out
}

// indexTemplate is parsed on first use: a process that links this
// package need not write a page.
var indexTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1250px; margin: 0 auto; padding: 1em 2em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { border-bottom: 1px solid #eee; padding-bottom: .2em; margin-top: 2em; }
h2 a { color: inherit; text-decoration: none; }
p.back { font-size: .85em; }
nav ul { columns: 2; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: .92em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .92em; }
caption { text-align: left; font-weight: 600; padding-bottom: .3em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
th { background: #f4f4f4; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; }
code { background: #f6f8fa; padding: 0 .2em; }
pre code { padding: 0; }
</style>
</head>
<body>
<h1 id="top">{{.Title}}</h1>
{{- if gt (len .Sections) 1}}
<nav id="contents"><h2>Contents</h2><ul>
{{- range .Sections}}
<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{- end}}
</ul></nav>
{{- end}}
{{- range .Sections}}
<section id="{{.ID}}">
<h2><a href="#{{.ID}}">{{.Title}}</a></h2>
{{- range .Paragraphs}}
<p>{{.}}</p>
{{- end}}
{{- range .Figures}}
<figure>
<a href="{{.SVG}}"><img src="{{.PNG}}" alt="{{.Caption}}"></a>
<figcaption>{{.Caption}} (<a href="{{.SVG}}">SVG</a>)</figcaption>
</figure>
{{- end}}
{{- range .Tables}}
{{template "table" .}}
{{- end}}
{{- with .Markdown}}
<div class="summary">
{{- range .}}
{{template "md" .}}
{{- end}}
</div>
{{- end}}
<p class="back"><a href="#top">Back to the contents</a></p>
</section>
{{- end}}
</body>
</html>
{{define "table"}}<table>
{{- with .Title}}
<caption>{{.}}</caption>
{{- end}}
<thead><tr>{{range .Headers}}<th{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>{{end}}
{{define "inline"}}{{range .}}{{if .Code}}<code>{{.Text}}</code>{{else if .Bold}}<strong>{{.Text}}</strong>{{else}}{{.Text}}{{end}}{{end}}{{end}}
{{define "md"}}
{{- if eq .Kind "h3"}}<h3>{{template "inline" .Inline}}</h3>
{{- else if eq .Kind "h4"}}<h4>{{template "inline" .Inline}}</h4>
{{- else if eq .Kind "h5"}}<h5>{{template "inline" .Inline}}</h5>
{{- else if eq .Kind "h6"}}<h6>{{template "inline" .Inline}}</h6>
{{- else if eq .Kind "p"}}<p>{{template "inline" .Inline}}</p>
{{- else if eq .Kind "ul"}}<ul>{{range .Items}}<li>{{template "inline" .}}</li>{{end}}</ul>
{{- else if eq .Kind "pre"}}<pre><code>{{.Code}}</code></pre>
{{- else if eq .Kind "table"}}<table>
{{- with .Header}}
<thead><tr>{{range .}}<th{{if .Right}} class="num"{{end}}>{{template "inline" .Inline}}</th>{{end}}</tr></thead>
{{- end}}
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Right}} class="num"{{end}}>{{template "inline" .Inline}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- end}}
`))
})
