package variability

import (
	"strings"
	"testing"
)

// ParseClass takes the four classes in the forms the inputs use, and its
// error quotes at most 40 bytes of what it read: a class field of a
// megabyte, or of invalid bytes that %q writes as four characters each,
// must not make every error that long (kube/podspec's FuzzRead found a
// 601-byte error from a 150-byte annotation).
func TestParseClass(t *testing.T) {
	for in, want := range map[string]Class{"A": 0, "b": 1, "classC": 2, "class D": 3, " a ": 0} {
		if c, err := ParseClass(in); err != nil || c != want {
			t.Errorf("ParseClass(%q) = %v, %v; want %v", in, c, err, want)
		}
	}
	for _, in := range []string{"E", "", "AB", strings.Repeat("\xa8", 150), strings.Repeat("x", 1<<20)} {
		_, err := ParseClass(in)
		if err == nil {
			t.Errorf("ParseClass(%.20q) accepted", in)
			continue
		}
		// 80 bytes shown (internal/quote), four characters each at worst.
		if n := len(err.Error()); n > 400 {
			t.Errorf("ParseClass(%.20q): error of %d bytes", in, n)
		}
	}
	if _, err := ParseClass("E"); err == nil || err.Error() != `unknown class "E" (want A, B, C or D)` {
		t.Errorf("ParseClass(E): %v", err)
	}
}
