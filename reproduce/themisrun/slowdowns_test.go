package themisrun

import "testing"

// The authors' table replaces the factors of the models it knows (of
// ours, vgg19: 0.70 across machines, 0.50 across racks; resnet50: 0.98 /
// 0.96, the same as ours) and leaves the rest (BERT 0.9 / 0.85), and
// every model keeps its iteration time.
func TestModelsWithSlowdowns(t *testing.T) {
	m, err := ModelsWithSlowdowns("authors")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model        string
		spread, rack float64
	}{{"vgg19", 0.70, 0.50}, {"resnet50", 0.98, 0.96}, {"BERT", 0.9, 0.85}} {
		if s, r := m.Sensitivity(tc.model); s != tc.spread || r != tc.rack {
			t.Errorf("%s: %v / %v, want %v / %v", tc.model, s, r, tc.spread, tc.rack)
		}
	}
	if it, _, _ := m.Lookup("vgg19"); it != 0.300610341 {
		t.Errorf("vgg19 iteration time %v, want 0.300610341", it)
	}
	if _, err := ModelsWithSlowdowns("theirs"); err == nil {
		t.Error("unknown table accepted")
	}
}
