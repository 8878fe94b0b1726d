package browsercheck

import (
	"runtime"
	"testing"
)

// fakeTB records what Require did instead of ending the test.
type fakeTB struct{ fatal, skip bool }

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Fatal(...any) { f.fatal = true; runtime.Goexit() }
func (f *fakeTB) Skip(...any)  { f.skip = true; runtime.Goexit() }
func require(f *fakeTB) {
	done := make(chan struct{})
	go func() { defer close(done); Require(f) }()
	<-done
}

// With no Chromium, Require fails the test under CI and skips elsewhere.
func TestRequireFailsInCIWhenChromiumIsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := fixedPath
	fixedPath = "/nonexistent/chromium"
	defer func() { fixedPath = old }()
	if Chromium() != "" {
		t.Fatal("chromium still found")
	}
	for _, tc := range []struct {
		ci          string
		fatal, skip bool
	}{{"true", true, false}, {"1", true, false}, {"", false, true}, {"false", false, true}} {
		t.Setenv("CI", tc.ci)
		f := &fakeTB{}
		require(f)
		if f.fatal != tc.fatal || f.skip != tc.skip {
			t.Errorf("CI=%q: fatal %v skip %v, want %v %v", tc.ci, f.fatal, f.skip, tc.fatal, tc.skip)
		}
	}
}
