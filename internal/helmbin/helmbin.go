// Package helmbin finds the helm binary hack/helm.sh builds and renders
// PAL's chart with it, for the tests that check the chart. The chart is
// rendered by the real helm, not by a copy of its template engine, so that
// what the tests see is what `helm install` would apply.
package helmbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Version is the helm release hack/helm.sh builds; keep the two equal.
const Version = "3.22.0"

// Path is where hack/helm.sh puts helm: $PAL_HELM, or the versioned
// directory under the user's cache.
func Path() string {
	if p := os.Getenv("PAL_HELM"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "pal", "testbin", "helm-"+Version, "helm")
}

// Find returns Path if an executable is there, and otherwise an error that
// says how to build one.
func Find() (string, error) {
	p := Path()
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("no helm binary at %s (run: bash hack/helm.sh)", p)
	}
	return p, nil
}

// Template runs `helm template RELEASE CHART --namespace NS` with each
// --set given, and returns the rendered manifests; a failed render returns
// helm's own message.
func Template(helm, chart, release, namespace string, set ...string) ([]byte, error) {
	args := []string{"template", release, chart, "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
