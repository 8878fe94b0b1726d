package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// findChromium is Debian's chromium, on PATH or where the package puts it.
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// TestIndexInBrowser opens a generated report in headless Chromium and
// checks what only a browser can: that every figure the page refers to
// actually loads and decodes.
func TestIndexInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := findChromium()
	if chromium == "" {
		t.Skip("chromium not found: install Debian's chromium (the CI script does) to run the browser test")
	}
	dir := t.TempDir()
	figures := writeSampleReport(t, dir)

	// Everything that could reach the network or leave state behind is
	// off, so the test is hermetic and repeatable.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(1280, 900),
	}
	// The whole browser session, start-up included, must fit well inside
	// a minute; a hung browser fails the test instead of the CI job.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel() // waits for the browser to exit before TempDir cleanup
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()

	page := "file://" + filepath.Join(dir, IndexFile)
	if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("opening %s in %s: %v", page, chromium, err)
	}
	type imageState struct {
		Total, Loaded int
		Broken        []string
		Tables        int
	}
	st, err := chromedp.Run(bctx, chromedp.Evaluate[imageState](imageCheck))
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

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100 means PNG
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
	if err := chromedp.Do(bctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	st, err = chromedp.Run(bctx, chromedp.Evaluate[imageState](imageCheck))
	if err != nil {
		t.Fatal(err)
	}
	if st.Loaded != st.Total-1 || len(st.Broken) != 1 || st.Broken[0] != figures[0]+".png" {
		t.Errorf("with %s.png removed the page reports %+v, want exactly it broken", figures[0], st)
	}
}

// imageCheck counts the page's images and those that loaded and decoded;
// Navigate waits for the load event, which waits for images, but each one
// is checked so a failure names the broken file.
const imageCheck = `(() => {
	const imgs = Array.from(document.images);
	const good = i => i.complete && i.naturalWidth > 0;
	return {
		Total: imgs.length,
		Loaded: imgs.filter(good).length,
		Broken: imgs.filter(i => !good(i)).map(i => i.getAttribute("src")),
		Tables: document.querySelectorAll("table").length,
	};
})()`
