package paper

import (
	"slices"
	"testing"
)

// Every placement has its own colour, and PAL and PM-First, which often
// overlap, also differ in line style and marker.
func TestPolicyLooksDistinct(t *testing.T) {
	seen := map[any]string{}
	for p, l := range policyLooks {
		if q, dup := seen[l.Color]; dup {
			t.Errorf("%s and %s share a colour", p, q)
		}
		seen[l.Color] = p
	}
	if len(seen) != 6 {
		t.Fatalf("%d placements styled, want 6", len(seen))
	}
	pal, pmf := policyLooks["pal"], policyLooks["pm-first"]
	if slices.Equal(pal.Dashes, pmf.Dashes) || pal.Shape == pmf.Shape {
		t.Error("PAL and PM-First share a line style or a marker")
	}
}
