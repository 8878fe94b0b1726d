package csvin

import (
	"errors"
	"strings"
	"testing"
)

// read opens in with opts, finds cols, and returns the first error of
// walking every row through get.
func read(in string, cols []string, get func(*Table, []int) error, opts ...Option) error {
	t, err := Open("f.csv", strings.NewReader(in), opts...)
	if err != nil {
		return err
	}
	idx, err := t.Cols(cols...)
	if err != nil {
		return err
	}
	for t.Next() {
		if err := get(t, idx); err != nil {
			return err
		}
	}
	return t.Err()
}

func intCols(t *Table, idx []int) error {
	for _, c := range idx {
		if _, err := t.Int(c); err != nil {
			return err
		}
	}
	return nil
}

func TestErrors(t *testing.T) {
	inline := []Option{Ragged(), RowLines(), InlineNames(), StripBOMs(), EmptyMsg("empty file (want a header a,b)")}
	cases := []struct {
		name, in string
		opts     []Option
		want     string
	}{
		{"empty", "", nil, "f.csv: empty file (no header)"},
		{"empty inline", "", inline, "f.csv: empty file (want a header a,b)"},
		{"duplicate", "a,b,A\n", []Option{FoldCase()}, `f.csv:1: field "A": column appears twice in the header`},
		{"duplicate inline", "a,b,a\n", inline, `f.csv:1: column "a" appears twice`},
		{"case kept", "A,b\n1,2\n", nil, `f.csv:1: field "a": missing column (header has A,b)`},
		{"missing inline", "a\n1\n", inline, `f.csv:1: missing column "b" (header must include a,b)`},
		{"field count", "a,b\n1,2\n3\n", nil, "f.csv:3: wrong number of fields"},
		{"short row", "a,b\n1,2\n3\n", inline, `f.csv:3: field "b": missing (row has 1 fields, header 2)`},
		{"quote inline", "a,b\n1,\"2\n", inline, `f.csv:2: column `},
		{"comment", "# x\na,b\n# y\n1,z\n", []Option{Comment('#')}, `f.csv:4: field "b": "z" is not an integer`},
		{"field line", "a,b\n\"1\n\",x\n", nil, `f.csv:3: field "b": "x" is not an integer`},
		{"row line", "a,b\n\"1\n\",x\n", inline, `f.csv:2: field "b": "x" is not an integer`},
		{"bom", "\ufeffa,\ufeffb\n1,2\n", nil, `f.csv:1: field "b": missing column`},
		{"all boms", "\ufeffa,\ufeffb\n1,-2\n", inline, `f.csv:2: field "b": "-2" must not be negative`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := read(tc.in, []string{"a", "b"}, intCols, tc.opts...)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error containing %q", err, tc.want)
			}
		})
	}
}

func TestFields(t *testing.T) {
	in := " x ,y,unnamed\n 2.5 ,3.0,\n"
	tb, err := Open("f.csv", strings.NewReader(in), FoldCase())
	if err != nil {
		t.Fatal(err)
	}
	if c := tb.OptCol("z", "X"); c != 0 {
		t.Fatalf("OptCol = %d", c)
	}
	if c := tb.OptCol("z"); c != -1 {
		t.Fatalf("OptCol of an absent column = %d", c)
	}
	if !tb.Next() {
		t.Fatal(tb.Err())
	}
	if v, err := tb.Positive(0); v != 2.5 || err != nil {
		t.Errorf("Positive = %v, %v", v, err)
	}
	if v, err := tb.Int(1); v != 3 || err != nil {
		t.Errorf("Int = %v, %v", v, err)
	}
	if tb.Raw(0) != " 2.5 " || tb.Text(0) != "2.5" || tb.Text(9) != "" || tb.Has(-1) {
		t.Errorf("Raw %q, Text %q", tb.Raw(0), tb.Text(0))
	}
	if _, err := tb.Float(2); err == nil || err.Error() != `f.csv:2: field "unnamed": "" is not a number` {
		t.Errorf("Float of an empty field: %v", err)
	}
	if tb.Next() || tb.Err() != nil {
		t.Fatal("expected the end", tb.Err())
	}
}

// Known refuses a column the format does not have, after a missing
// column and before any row; the escape hatch ignores it with one line.
func TestKnownColumns(t *testing.T) {
	known := Known("a", "b", "c")
	cases := []struct {
		name, in string
		opts     []Option
		warn     bool
		want     string // error; "" for none
		warning  string
	}{
		{"all known", "a,b,c\n1,2,3\n", []Option{known}, false, "", ""},
		{"subset", "b,a\n1,2\n", []Option{known}, false, "", ""},
		{"typo", "a,b,cc\n1,2,3\n", []Option{known}, false,
			`f.csv:1: field "cc": unknown column (known columns: a,b,c; --allow-extra-columns ignores unknown columns)`, ""},
		{"inline", "a,b,priorty\n1,2,3\n", []Option{known, InlineNames()}, false,
			`f.csv:1: unknown column "priorty" (known columns: a,b,c; --allow-extra-columns ignores unknown columns)`, ""},
		// A missing required column is named first.
		{"missing first", "a,x\n1,2\n", []Option{known}, false, `f.csv:1: field "b": missing column (header has a,x)`, ""},
		// Case folds with FoldCase; pandas' unnamed index column is no column.
		{"fold", ",A,B\n0,1,2\n", []Option{known, FoldCase()}, false, "", ""},
		{"no Known", "a,b,zz\n1,2,3\n", nil, false, "", ""},
		{"allowed", "a,b,x,y\n1,2,3,4\n", []Option{known}, true, "", "f.csv: ignoring unknown columns x,y (known columns: a,b,c)"},
	}
	for _, c := range cases {
		var got []string
		if c.warn {
			SetAllowExtraColumns(func(m string) { got = append(got, m) })
		}
		err := read(c.in, []string{"a", "b"}, intCols, c.opts...)
		SetAllowExtraColumns(nil)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		if c.warning != "" && (len(got) != 1 || got[0] != c.warning) {
			t.Errorf("%s: warnings %q, want %q", c.name, got, c.warning)
		}
	}
	// A reader that never asks for its columns still meets the check at
	// its first row.
	tb, err := Open("f.csv", strings.NewReader("a,q\n1,2\n"), known)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Next() || tb.Err() == nil || !strings.Contains(tb.Err().Error(), `field "q": unknown column`) {
		t.Errorf("Next without Cols: %v", tb.Err())
	}
}
