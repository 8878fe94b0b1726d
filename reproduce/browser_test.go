package reproduce

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/report/browsercheck"
	"github.com/palsched/pal/report/page"
)

// ScreenshotWidth is the window width of the screenshot test, in CSS
// pixels: a laptop browser's.
const ScreenshotWidth = 1400

// checkIndexInBrowser opens the report's index.html in headless Chromium
// and checks what a reader meets: every image (PAL's, HiveD's and
// Themis') loads, every section is there in order and reachable from the
// contents, the first figure comes before the first table, the --quick
// warning is on the page, and a full-page screenshot at 1400 px is the
// page's size and not blank. Under CI a missing Chromium fails the test.
func checkIndexInBrowser(t *testing.T, dir string, rep *Report) {
	t.Helper()
	chromium := browsercheck.Require(t)
	var want []string // every image the page must show
	titles := []string{AboutTitle}
	for _, f := range rep.Figures {
		for _, p := range f.Plots {
			want = append(want, p+".png")
		}
		titles = append(titles, f.Title)
	}
	if rep.Hived == nil || rep.Themis == nil || len(rep.Hived.Figures) < 6 || len(rep.Themis.Figures) < 3 {
		t.Fatalf("HiveD figures %v, Themis %v: want the quick run's 6 and 3 at least", rep.Hived, rep.Themis)
	}
	if rep.Stale == nil || len(rep.Stale.Figures) != 2 {
		t.Fatalf("stale figures %v: want one per family", rep.Stale)
	}
	for _, b := range rep.Stale.Figures {
		want = append(want, "stale/"+b+".png")
	}
	for _, b := range rep.Hived.Figures {
		want = append(want, "hived/"+b+".png")
	}
	for _, b := range rep.Themis.Figures {
		want = append(want, "themis/"+b+".png")
	}
	titles = append(titles, StaleTitle, HivedTitle, ThemisTitle, BackfillTitle, ClaimsTitle)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	br := browsercheck.StartSized(ctx, chromium, filepath.Join(t.TempDir(), "profile"), t.Logf, ScreenshotWidth, 1000)
	defer br.Close()
	index := filepath.Join(dir, page.IndexFile)
	if err := br.Open(index); err != nil {
		t.Fatalf("opening %s: %v", index, err)
	}
	st, err := br.Images()
	if err != nil {
		t.Fatal(err)
	}
	if st.Loaded != st.Total || !slices.Equal(st.Sources, want) {
		t.Errorf("browser: %d of %d images loaded, broken %v\nsources %v\nwant    %v", st.Loaded, st.Total, st.Broken, st.Sources, want)
	}
	lay, err := br.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lay.Sections, titles) {
		t.Errorf("sections\n%q\nwant\n%q", lay.Sections, titles)
	}
	if lay.ContentsLinks != len(titles) || len(lay.DeadLinks) != 0 {
		t.Errorf("contents: %d links for %d sections, dead links %v", lay.ContentsLinks, len(titles), lay.DeadLinks)
	}
	if !(lay.FirstImageTop > 0 && lay.FirstImageTop < lay.FirstTableTop) || lay.FirstImageTop > 2500 {
		t.Errorf("first figure at %.0f px, first table at %.0f px: want a figure first, within the first 2,500 px", lay.FirstImageTop, lay.FirstTableTop)
	}
	if lay.Width > ScreenshotWidth {
		t.Errorf("page is %.0f px wide in a %d px window: it scrolls sideways", lay.Width, ScreenshotWidth)
	}
	html, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"This is the --quick plan, and its numbers are not meaningful", "--quick: the Philly rows are not meaningful", "--quick: these numbers are not meaningful", "philly-vc01"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("index.html lacks %q", s)
		}
	}

	shot, err := br.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != ScreenshotWidth || float64(b.Dy()) < 0.98*lay.Height || b.Dy() < 10000 {
		t.Errorf("screenshot %dx%d, page %.0fx%.0f: want %d px wide and the whole page tall", b.Dx(), b.Dy(), lay.Width, lay.Height, ScreenshotWidth)
	}
	if ink, colours := inked(img); ink < 0.05 || colours < 64 {
		t.Errorf("screenshot looks blank: %.1f%% of pixels not white, %d colours", 100*ink, colours)
	}
	if err := os.WriteFile(filepath.Join(dir, "screenshot.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("PAL_REPORT_SCREENSHOT"); path != "" {
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The check has teeth: with one HiveD figure gone, the page shows it
	// broken.
	gone := want[len(want)-len(rep.Themis.Figures)-1]
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
	}
	if err := br.Reload(); err != nil {
		t.Fatal(err)
	}
	if st, err = br.Images(); err != nil || len(st.Broken) != 1 || st.Broken[0] != gone {
		t.Errorf("with %s removed the page reports %+v (%v), want exactly it broken", gone, st.Broken, err)
	}
}

// inked is the share of an image's pixels (sampled on a 4-pixel grid)
// that are not white, and how many distinct colours the sample holds.
func inked(img image.Image) (float64, int) {
	b := img.Bounds()
	colours := map[[3]uint32]bool{}
	ink, n := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
			if len(colours) < 1<<12 {
				colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			}
		}
	}
	return float64(ink) / float64(max(n, 1)), len(colours)
}
