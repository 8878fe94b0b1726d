package main

import (
	"strings"
	"testing"

	"github.com/palsched/pal/internal/cliroot/clitest"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clitest.Run(t, newRootCmd(), args...)
}

// pal-kube speaks pal's vocabulary (clitest's rules) and --version names
// the binary.
func TestCLIVocabulary(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || !strings.HasPrefix(out, "pal-kube ") {
		t.Fatalf("--version: %q, %v", out, err)
	}
	// The commands whose -o picks something other than a results format.
	other := map[string]string{"pal-kube profile export": "kubernetes", "pal-kube profile bench": "yaml"}
	if commands, flags := clitest.CheckFlags(t, newRootCmd(), DefaultOutput, other); commands < 9 || flags < 60 {
		t.Fatalf("walked only %d commands, %d flags", commands, flags)
	}
	help, _ := run(t, "--help")
	for _, c := range []string{"scheduler", "dev-cluster", "replay", "profile"} {
		if !strings.Contains(help, "\n  "+c+" ") {
			t.Errorf("pal-kube --help does not list %s:\n%s", c, help)
		}
	}
}
