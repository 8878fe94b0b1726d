package cliroot

import (
	"runtime/debug"
	"strings"
	"testing"
)

// --version names the release or module version, the commit, its time
// and uncommitted changes, and says how to get them when the build has
// none.
func TestVersionString(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: strings.Repeat("ab12", 10)},
		{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		release string
		bi      *debug.BuildInfo
		want    string
	}{
		{"devel", vcs, "devel (commit " + strings.Repeat("ab12", 3) + " of 2026-12-01T10:00:00Z, with uncommitted changes), go1.99"},
		{"v1.2.3", vcs, "v1.2.3 (commit " + strings.Repeat("ab12", 3) + " of 2026-12-01T10:00:00Z, with uncommitted changes), go1.99"},
		{"devel", &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0 (no commit recorded: build with go build -buildvcs=true ./cmd/pal in the checkout), go1.99"},
		{"devel", nil, "devel"},
	} {
		if got := FormatVersion("pal", tc.release, tc.bi); got != tc.want {
			t.Errorf("%s: got %q\nwant %q", tc.release, got, tc.want)
		}
	}
	clean := *vcs
	clean.Settings = vcs.Settings[:3]
	if got := FormatVersion("pal", "devel", &clean); got != "devel (commit "+strings.Repeat("ab12", 3)+" of 2026-12-01T10:00:00Z), go1.99" {
		t.Errorf("clean tree: %q", got)
	}
	if got := FormatVersion("pal-kube", "devel", &debug.BuildInfo{}); got != "devel (no commit recorded: build with go build -buildvcs=true ./cmd/pal-kube in the checkout)" {
		t.Errorf("pal-kube without a commit: %q", got)
	}
}
