package stale

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Told of each change, the rule does exactly what the events say: every
// slowed GPU goes in when it turns 2x slow (2 >= 1.5), the first half
// come out when they are back at their profile (1 < 1.25): 6 + 3 = 9
// changes, the six slowed GPUs, three in at the end, on every seed and
// load. Learning alone and told alone place alike here (packed-sticky
// inside the VCs reads no scores, and hived-speed binds by the scores it
// started with), so their figures are equal. The markdown has a row per
// load and variant.
func TestQuarantineVariant(t *testing.T) {
	r, err := runQuarantine(context.Background(), t.TempDir(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != len(QuarantineLoads)*len(QuarantineSeeds)*len(quarantineVariants) {
		t.Fatalf("%d runs", len(r.Rows))
	}
	byKey := map[string]QuarantineRow{}
	for _, row := range r.Rows {
		byKey[fmt.Sprintf("%g/%d/%s", row.Load, row.Seed, row.Variant)] = row
		if row.Variant == "told+quarantine" {
			q := row.Quarantine
			if q == nil || q.Changes != 9 || fmt.Sprint(q.GPUs) != fmt.Sprint(r.Slow[row.Seed]) || q.AtEnd != 3 {
				t.Errorf("load %g seed %d: told+quarantine %+v, want 9 changes of %v, 3 at the end", row.Load, row.Seed, q, r.Slow[row.Seed])
			}
		}
		if (row.Quarantine != nil) != strings.HasSuffix(row.Variant, "+quarantine") {
			t.Errorf("load %g seed %d %s: quarantine figures %+v", row.Load, row.Seed, row.Variant, row.Quarantine)
		}
	}
	for _, load := range QuarantineLoads {
		for _, seed := range QuarantineSeeds {
			l, k := byKey[fmt.Sprintf("%g/%d/learning", load, seed)], byKey[fmt.Sprintf("%g/%d/told", load, seed)]
			if l.MeanJCT != k.MeanJCT || fmt.Sprint(l.VCWait) != fmt.Sprint(k.VCWait) {
				t.Errorf("load %g seed %d: learning %v %v, told %v %v", load, seed, l.MeanJCT, l.VCWait, k.MeanJCT, k.VCWait)
			}
		}
	}
	var b strings.Builder
	quarantineMarkdown(&b, r)
	if n := strings.Count(b.String(), "+quarantine |"); n != 2*len(QuarantineLoads) {
		t.Errorf("markdown has %d quarantine rows, want %d:\n%s", n, 2*len(QuarantineLoads), b.String())
	}
	t.Log(b.String())
}
