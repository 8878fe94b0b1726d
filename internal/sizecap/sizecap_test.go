package sizecap

import (
	"errors"
	"strings"
	"testing"
)

// A reader at the limit is read whole; one byte more is refused with the
// name, the limit and the kind of file, having read only limit+1 bytes.
func TestReadAll(t *testing.T) {
	b, err := ReadAll("f.yaml", strings.NewReader("12345"), 5, "a test file")
	if err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	r := strings.NewReader("123456789")
	_, err = ReadAll("f.yaml", r, 5, "a test file")
	var tl *TooLarge
	if !errors.As(err, &tl) || err.Error() != "f.yaml: larger than 5 bytes, more than a test file may have" {
		t.Fatalf("over the limit: %v", err)
	}
	if r.Len() != 3 {
		t.Errorf("read %d bytes, want 6", 9-r.Len())
	}
	for n, want := range map[int64]string{4 << 20: "4 MiB", 64 << 10: "64 KiB", 1000: "1000 bytes", 3<<20 + 1: "3145729 bytes"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
