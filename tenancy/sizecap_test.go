package tenancy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cells file over MaxFileBytes is refused before it is parsed, with its
// name and the limit; a file at the limit is read and parsed (here it
// fails as YAML: a plain key may not be that long).
func TestLoadFileSizeCap(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		size int
		want string
	}{
		{MaxFileBytes + 1, "larger than 4 MiB, more than a cells file may have"},
		{MaxFileBytes, "mapping values are not allowed"},
	} {
		p := filepath.Join(dir, "cells.yaml")
		key := strings.Repeat("k", tc.size-2)
		if err := os.WriteFile(p, []byte(key+": "), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadFile(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 1024 {
			t.Errorf("%d bytes: err %.300v, want %q in under 1 KB", tc.size, err, tc.want)
		}
	}
}
