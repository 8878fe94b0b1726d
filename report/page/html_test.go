package page

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/report"
)

// blankDrawer stands in for report/draw (which would bring the plotting
// library into these tests): a blank PNG of a drawn figure's size (8 x 4.5
// inches at 150 dpi) and an SVG holding the chart's title.
type blankDrawer struct{}

func (blankDrawer) Save(c report.Chart, dir, base string) error {
	if err := report.CheckFigureName(base); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	img := image.NewGray(image.Rect(0, 0, 1200, 675))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	img.Set(10, 10, color.Black)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, base+".png"), b.Bytes(), 0o644); err != nil {
		return err
	}
	svg := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="576" height="324"><text x="10" y="20">%s</text></svg>`, chartTitle(c))
	return os.WriteFile(filepath.Join(dir, base+".svg"), []byte(svg), 0o644)
}

func chartTitle(c report.Chart) string {
	switch c := c.(type) {
	case *report.BarChart:
		return c.Title
	case *report.LineChart:
		return c.Title
	}
	return ""
}

func sampleBars() *report.BarChart {
	return &report.BarChart{Title: "normalised JCT", Categories: []string{"1", "geomean"}, Series: []report.BarSeries{{Name: "PAL", Values: []float64{0.9, 0.8}}}}
}

func sampleLines() *report.LineChart {
	return &report.LineChart{Title: "JCT vs locality", Series: []report.Series{{Name: "PAL", X: []float64{1, 2}, Y: []float64{3, 4}}}}
}

// sampleTable is report's own test table: numbers, a Markdown pipe in a
// cell and a short row.
func sampleTable() *report.Table {
	return report.NewTable("Normalised JCT", "trace", "PAL", "PM-First", "jobs").
		AddRow("1", 0.8734567, 0.9, 160).
		AddRow("geomean", 0.81, 1.0/3, 160).
		AddRow("a|b", float32(0.1), nil)
}

// writeSampleReport saves two figures and an index with a table into dir
// and returns the figures' base names.
func writeSampleReport(t *testing.T, dir string) []string {
	t.Helper()
	if err := report.Save(blankDrawer{}, sampleBars(), dir, "fig7-jct"); err != nil {
		t.Fatal(err)
	}
	if err := report.Save(blankDrawer{}, sampleLines(), dir, "locality sweep"); err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := sampleTable().WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	err := WriteIndex(dir, "PAL <reproduction>", []Section{
		{
			Title:    "A1: Sia-Philly",
			Text:     "Average JCT of each placement,\nnormalised to Packed-Sticky.\n\nLower is better.",
			Figures:  []string{"fig7-jct"},
			Captions: map[string]string{"fig7-jct": "Fig. 7 & friends"},
			Tables:   []*report.Table{sampleTable()},
		},
		{
			Title:    "A2: locality sweep",
			Figures:  []string{"locality sweep"},
			Markdown: "Summary with `pal sim` and **bold**.\n\n" + md.String(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []string{"fig7-jct", "locality sweep"}
}

func TestWriteIndex(t *testing.T) {
	dir := t.TempDir()
	writeSampleReport(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<title>PAL &lt;reproduction&gt;</title>",
		`<a href="#s1">A1: Sia-Philly</a>`,
		`<section id="s2">`,
		"<p>Average JCT of each placement, normalised to Packed-Sticky.</p>",
		"<p>Lower is better.</p>",
		`<a href="fig7-jct.svg"><img src="fig7-jct.png" alt="Fig. 7 &amp; friends"></a>`,
		`<img src="locality%20sweep.png" alt="locality sweep">`,
		"<caption>Normalised JCT</caption>",
		`<th class="num">PAL</th>`,
		`<td class="num">0.873</td>`,
		"<td>a|b</td>",
		"<code>pal sim</code>",
		"<strong>bold</strong>",
		"<h3>Normalised JCT</h3>",
		`<td class="num">0.333</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "http://", "https://", "<link"} {
		if strings.Contains(page, banned) {
			t.Errorf("index contains %q; it must be self-contained", banned)
		}
	}
}

func TestWriteIndexErrors(t *testing.T) {
	dir := t.TempDir()
	if err := report.Save(blankDrawer{}, sampleLines(), dir, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "ok.svg")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		fig, want string
	}{
		"missing figure": {"nope", `figure "nope"`},
		"missing SVG":    {"ok", "ok.svg"},
		"parent dir":     {"../x", "under a subdirectory of the index's directory"},
		"absolute":       {"/tmp/x", "under a subdirectory of the index's directory"},
		"backslash":      {`sub\\x`, "plain file name"},
		"with extension": {"ok.png", "plain file name"},
		"missing in sub": {"sub/nope", `figure "sub/nope"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := WriteIndex(dir, "t", []Section{{Title: "s", Figures: []string{tc.fig}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, IndexFile)); err == nil {
				t.Fatal("a failed WriteIndex left an index behind")
			}
		})
	}
}

func TestParagraphs(t *testing.T) {
	got := paragraphs("  one\ntwo  \r\n\r\n\n three ")
	if len(got) != 2 || got[0] != "one two" || got[1] != "three" {
		t.Errorf("paragraphs = %q", got)
	}
	if got := paragraphs(" \n\n "); got != nil {
		t.Errorf("paragraphs of blanks = %q", got)
	}
}
