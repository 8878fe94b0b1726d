package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.csv")
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "a,b\n1,2\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("wrote %q, %v", b, err)
	}
	// A failure half-way leaves the old file as it was and no temporary file.
	bad := errors.New("row 7: bad")
	err := Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return bad })
	if !errors.Is(err, bad) || err.Error() != "writing "+p+": row 7: bad" {
		t.Fatalf("error %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("after a failure the file holds %q, %v", b, err)
	}
	if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}
