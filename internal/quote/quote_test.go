package quote

import (
	"strings"
	"testing"
)

func TestValue(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "1e300", `"1e300"`},
		{"exactly Show", strings.Repeat("x", Show), `"` + strings.Repeat("x", Show) + `"`},
		{"long", strings.Repeat("9", 300), `"` + strings.Repeat("9", 80) + `"... (300 bytes)`},
		// A cut never splits a character: 79 ASCII bytes, then é (2 bytes).
		{"at a character", strings.Repeat("a", 79) + "é" + strings.Repeat("b", 10), `"` + strings.Repeat("a", 79) + `"... (91 bytes)`},
		// Invalid bytes are escaped, four characters each, but only Show of them.
		{"invalid bytes", strings.Repeat("\x98", 1<<20), `"` + strings.Repeat(`\x98`, 80) + `"... (1048576 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Value(tc.in); got != tc.want {
				t.Errorf("Value: %.120s, want %.120s", got, tc.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	if got := Text("c0"); got != "c0" {
		t.Errorf("short name: %s", got)
	}
	if got, want := Text(strings.Repeat("n", 200)), strings.Repeat("n", 80)+"... (200 bytes)"; got != want {
		t.Errorf("long name: %s", got)
	}
}

func TestMessage(t *testing.T) {
	if got := Message("short"); got != "short" {
		t.Errorf("short message: %s", got)
	}
	long := `invalid label value "` + strings.Repeat("\xee", 3000) + `"`
	if got, want := Message(long), long[:240]+"... (a message of 3022 bytes)"; got != want {
		t.Errorf("long message: %.300s", got)
	}
}
