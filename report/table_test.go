package report

import (
	"math"
	"strings"
	"testing"
	"time"
)

func sampleTable() *Table {
	return NewTable("Normalised JCT", "trace", "PAL", "PM-First", "jobs").
		AddRow("1", 0.8734567, 0.9, 160).
		AddRow("geomean", 0.81, 1.0/3, 160).
		AddRow("a|b", float32(0.1), nil)
}

func TestTableText(t *testing.T) {
	want := `Normalised JCT
┌─────────┬───────┬──────────┬──────┐
│ trace   │   PAL │ PM-First │ jobs │
├─────────┼───────┼──────────┼──────┤
│ 1       │ 0.873 │    0.900 │  160 │
│ geomean │ 0.810 │    0.333 │  160 │
│ a|b     │ 0.100 │          │      │
└─────────┴───────┴──────────┴──────┘
`
	if got := sampleTable().String(); got != want {
		t.Errorf("text table:\n%s\nwant:\n%s", got, want)
	}
}

func TestTableMarkdown(t *testing.T) {
	want := `#### Normalised JCT

| trace | PAL | PM-First | jobs |
| --- | ---:| ---:| ---:|
| 1 | 0.873 | 0.900 | 160 |
| geomean | 0.810 | 0.333 | 160 |
| a\|b | 0.100 |  |  |
`
	var b strings.Builder
	if err := sampleTable().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestTableCSVKeepsPrecision(t *testing.T) {
	want := "trace,PAL,PM-First,jobs\n1,0.8734567,0.9,160\ngeomean,0.81,0.3333333333333333,160\na|b,0.1,,\n"
	var b strings.Builder
	if err := sampleTable().WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestFormatCell(t *testing.T) {
	cases := map[string]struct {
		v    any
		prec int
		want string
	}{
		"default precision":   {2.0 / 3, 0, "0.667"},
		"explicit precision":  {2.0 / 3, 1, "0.7"},
		"shortest":            {2.0 / 3, -1, "0.6666666666666666"},
		"no exponent":         {1e7, -1, "10000000"},
		"NaN":                 {math.NaN(), 2, "NaN"},
		"+Inf":                {math.Inf(1), 2, "+Inf"},
		"-Inf":                {math.Inf(-1), -1, "-Inf"},
		"int":                 {int64(-3), 2, "-3"},
		"nil":                 {nil, 2, ""},
		"stringer":            {2 * time.Second, 2, "2s"},
		"float32 stays short": {float32(0.3), -1, "0.3"},
		"bool via Sprint":     {true, 0, "true"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := formatCell(tc.v, tc.prec); got != tc.want {
				t.Errorf("formatCell(%v, %d) = %q, want %q", tc.v, tc.prec, got, tc.want)
			}
		})
	}
}

func TestNumericColumns(t *testing.T) {
	tb := NewTable("", "a", "b", "c", "d").
		AddRow("x", 1, 2.5, "").
		AddRow(nil, 2, "n/a")
	got := tb.NumericColumns()
	want := []bool{false, true, false, false} // d has no values at all
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %d numeric=%v, want %v", i, got[i], want[i])
		}
	}
}

// A row longer than the header still renders, with a blank heading.
func TestRaggedRows(t *testing.T) {
	tb := NewTable("", "a").AddRow(1, 2)
	var b strings.Builder
	if err := tb.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if want := "a,\n1,2\n"; b.String() != want {
		t.Errorf("csv %q, want %q", b.String(), want)
	}
	if cells := tb.Cells(); len(cells[0]) != 2 {
		t.Errorf("cells %v", cells)
	}
}
