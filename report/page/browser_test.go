package page

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/palsched/pal/report/browsercheck"
)

// TestIndexInBrowser opens a generated report in headless Chromium and
// checks what only a browser can: that every figure the page refers to
// actually loads and decodes.
func TestIndexInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := browsercheck.Require(t)
	dir := t.TempDir()
	figures := writeSampleReport(t, dir)

	// The whole browser session, start-up included, must fit well inside
	// a minute; a hung browser fails the test instead of the CI job.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	br := browsercheck.Start(ctx, chromium, filepath.Join(t.TempDir(), "profile"), t.Logf)
	defer br.Close() // waits for the browser to exit before TempDir cleanup

	page := filepath.Join(dir, IndexFile)
	if err := br.Open(page); err != nil {
		t.Fatalf("opening %s in %s: %v", page, chromium, err)
	}
	st, err := br.Images()
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != len(figures) {
		t.Errorf("page has %d images, want one per figure (%d)", st.Total, len(figures))
	}
	if st.Loaded != st.Total {
		t.Errorf("%d of %d images did not load: %v", st.Total-st.Loaded, st.Total, st.Broken)
	}
	// One table from Section.Tables, one from the Markdown summary.
	if st.Tables != 2 {
		t.Errorf("page has %d tables, want 2", st.Tables)
	}

	shot, err := br.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 900 {
		t.Errorf("screenshot is %dx%d; a page with two figures should be taller", b.Dx(), b.Dy())
	}
	out := filepath.Join(dir, "screenshot.png")
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("PAL_REPORT_SCREENSHOT"); path != "" {
		// For looking at the page by eye: the temp dir is gone after the test.
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The check must have teeth: with one PNG gone, it has to see a
	// broken image.
	if err := os.Remove(filepath.Join(dir, figures[0]+".png")); err != nil {
		t.Fatal(err)
	}
	if err := br.Reload(); err != nil {
		t.Fatal(err)
	}
	st, err = br.Images()
	if err != nil {
		t.Fatal(err)
	}
	if st.Loaded != st.Total-1 || len(st.Broken) != 1 || st.Broken[0] != figures[0]+".png" {
		t.Errorf("with %s.png removed the page reports %+v, want exactly it broken", figures[0], st)
	}
}
