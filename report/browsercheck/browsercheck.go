// Package browsercheck opens a generated HTML report in Debian's headless
// Chromium and reports what only a browser can tell: whether every image
// the page refers to actually loads and decodes. Tests use it; the pal
// binary does not import it, so chromedp stays out of the CLI.
package browsercheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/chromedp/chromedp"
)

// fixedPath is where Debian installs chromium when PATH misses it (a
// variable so the tests can take it away).
var fixedPath = "/usr/bin/chromium"

// Chromium returns the path of Debian's chromium, or "" when it is not
// installed.
func Chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat(fixedPath); err == nil {
		return fixedPath
	}
	return ""
}

// SkipMessage is what a test says when Chromium is missing.
const SkipMessage = "chromium not found: install Debian's chromium (the CI script does) to run the browser test"

// InCI says whether the tests run under CI (CI set to anything but "",
// "0" or "false"), where a missing component is a failure, not a skip.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// TB is the part of testing.TB that Require uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// Require returns Chromium's path for a browser test. When Chromium is
// missing the test fails under CI (the CI script installs it, so a
// missing browser means the check did not run) and skips with a message
// elsewhere.
func Require(t TB) string {
	t.Helper()
	p := Chromium()
	if p == "" {
		if InCI() {
			t.Fatal("CI is set but " + SkipMessage)
		} else {
			t.Skip(SkipMessage)
		}
	}
	return p
}

// State is what the page shows.
type State struct {
	Total, Loaded int
	Broken        []string
	// Sources are every image's src, in page order.
	Sources []string
	Tables  int
}

// Layout is where the page's parts sit, in CSS pixels from the top of the
// document, for tests that check the order a reader meets them in.
type Layout struct {
	// Sections are the texts of the h2 headings, in order; SectionIDs
	// the ids of the sections holding them.
	Sections, SectionIDs []string
	// ContentsLinks counts the table of contents' links; DeadLinks lists
	// the in-page links whose target id does not exist.
	ContentsLinks int
	DeadLinks     []string
	// FirstImageTop and FirstTableTop are the top of the first image and
	// of the first table (-1 when there is none).
	FirstImageTop, FirstTableTop float64
	// Width and Height are the document's size.
	Width, Height float64
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	ctx    context.Context
	cancel []context.CancelFunc
}

// Start launches Chromium with everything that could reach the network or
// leave state behind turned off, so a check is hermetic and repeatable.
// profileDir must be an empty directory. The caller's ctx bounds the
// whole session, start-up included.
func Start(ctx context.Context, chromium, profileDir string, logf func(string, ...any)) *Browser {
	return StartSized(ctx, chromium, profileDir, logf, 1280, 900)
}

// StartSized is Start with a window of width x height CSS pixels (the
// screenshot's width).
func StartSized(ctx context.Context, chromium, profileDir string, logf func(string, ...any), width, height int) *Browser {
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
		chromedp.UserDataDir(profileDir),
		chromedp.WindowSize(width, height),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(logf))
	return &Browser{ctx: bctx, cancel: []context.CancelFunc{bcancel, acancel}}
}

// Close stops the browser and waits for it to exit.
func (b *Browser) Close() {
	for _, c := range b.cancel {
		c()
	}
}

// Open navigates to a local HTML file; it returns after the load event,
// which waits for the page's images.
func (b *Browser) Open(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return chromedp.Do(b.ctx, chromedp.Navigate("file://"+abs))
}

// Reload reloads the current page.
func (b *Browser) Reload() error { return chromedp.Do(b.ctx, chromedp.Reload()) }

// Images counts the page's images, those that loaded and decoded, and its
// tables; each image is checked so a failure names the broken file.
func (b *Browser) Images() (State, error) {
	return chromedp.Run(b.ctx, chromedp.Evaluate[State](imageCheck))
}

// Layout measures the page's headings, links, first image and first
// table.
func (b *Browser) Layout() (Layout, error) {
	return chromedp.Run(b.ctx, chromedp.Evaluate[Layout](layoutCheck))
}

// Screenshot returns a full-page PNG.
func (b *Browser) Screenshot() ([]byte, error) {
	return chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // 100 means PNG
}

const imageCheck = `(() => {
	const imgs = Array.from(document.images);
	const good = i => i.complete && i.naturalWidth > 0;
	return {
		Total: imgs.length,
		Loaded: imgs.filter(good).length,
		Broken: imgs.filter(i => !good(i)).map(i => i.getAttribute("src")),
		Sources: imgs.map(i => i.getAttribute("src")),
		Tables: document.querySelectorAll("table").length,
	};
})()`

const layoutCheck = `(() => {
	const top = e => e ? e.getBoundingClientRect().top + window.scrollY : -1;
	const h2s = Array.from(document.querySelectorAll("section > h2"));
	const links = Array.from(document.querySelectorAll('a[href^="#"]'));
	return {
		Sections: h2s.map(h => h.textContent.trim()),
		SectionIDs: h2s.map(h => h.parentElement.id),
		ContentsLinks: document.querySelectorAll("nav a[href^='#']").length,
		DeadLinks: links.map(a => a.getAttribute("href").slice(1)).filter(id => !document.getElementById(id)),
		FirstImageTop: top(document.querySelector("img")),
		FirstTableTop: top(document.querySelector("table")),
		Width: document.documentElement.scrollWidth,
		Height: document.documentElement.scrollHeight,
	};
})()`
