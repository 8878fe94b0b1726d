package main

import (
	"strings"
	"testing"
)

// `pal reproduce` has moved to pal-reproduce: every form of it fails with
// the exact command to run instead, arguments and flags kept, and pal's
// help names the new binary while the stub stays out of the command list.
func TestReproduceMoved(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce"}, "moved: go run ./cmd/pal-reproduce (or go install ./cmd/pal-reproduce)"},
		{[]string{"reproduce", "--quick", "--out", "out"}, "moved: go run ./cmd/pal-reproduce --quick --out out (or"},
		{[]string{"reproduce", "hived", "--quick"}, "moved: go run ./cmd/pal-reproduce hived --quick (or"},
		{[]string{"reproduce", "--help"}, "moved: go run ./cmd/pal-reproduce --help (or"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := run(t, tc.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v (output %q), want it to start %q", err, out, tc.want)
			}
		})
	}
	help, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help, "go install ./cmd/pal-reproduce") {
		t.Errorf("pal --help does not name pal-reproduce:\n%s", help)
	}
	if strings.Contains(help, "\n  reproduce ") {
		t.Errorf("pal --help lists the moved reproduce command:\n%s", help)
	}
}
