package csvin

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// zeros is n bytes of '0' without holding them: a reader of a huge field.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	for i := range p[:k] {
		p[i] = '0'
	}
	z.n -= k
	return k, nil
}

// Lines and rows are capped at MaxLine: the error names the line the long
// line or row starts on and the field it is in, and says so in a short
// message; a line of exactly MaxLine bytes (newline excluded) passes.
func TestLineAndRowCaps(t *testing.T) {
	long := func(head, pre string, n int, post string) io.Reader {
		return io.MultiReader(strings.NewReader(head+pre), &zeros{n}, strings.NewReader(post))
	}
	for _, tc := range []struct {
		name string
		in   io.Reader
		want string // "" for no error
	}{
		{"100 MB field", long("a,b\n1,2\n", "3,", 100<<20, "\n"), `f.csv:3: field "b": line longer than 1 MiB; no input line is that long`},
		{"just over", long("a,b\n", "1,", MaxLine-1, "\n"), `f.csv:2: field "b": line longer than 1 MiB`},
		{"at the cap", long("a,b\n", "1,", MaxLine-2, "\n4,5\n"), ""},
		{"long header", long("a,", "", 2*MaxLine, "\n"), `f.csv:1: line longer than 1 MiB`},
		{"open quote", strings.NewReader("a,b\n1,\"" + strings.Repeat("x\n", MaxLine/2+1)), `f.csv:2: field "b": row longer than 1 MiB (a quoted field left open?)`},
		{"comment with a quote", long("# 5\" disk\na,b\n", "", 0, strings.Repeat("1,2\n", MaxLine/4+1)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := Open("f.csv", tc.in, Comment('#'))
			if err == nil {
				for tb.Next() {
				}
				err = tb.Err()
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err %v, want %s...", err, tc.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("message of %d bytes", len(err.Error()))
			}
		})
	}
}

// A value quoted in an error is cut to 80 bytes with its length.
func TestQuoteCuts(t *testing.T) {
	v := strings.Repeat("9", 300)
	err := read("a\n"+v+"x\n", []string{"a"}, intCols)
	if err == nil || len(err.Error()) > 150 || !strings.Contains(err.Error(), "(301 bytes) is not an integer") {
		t.Errorf("long value's error: %v", err)
	}
}

// A header named in a message: short plain names as they are, a long
// one or one holding a control byte quoted, and no more names than fit a
// line.
func TestHeadList(t *testing.T) {
	many := make([]string, 25)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	wide := make([]string, 1000)
	for i := range wide {
		wide[i] = strings.Repeat("w", 80)
	}
	for _, tc := range []struct {
		name   string
		in     []string
		want   string
		atMost int
	}{
		{"plain", []string{"a", "b c"}, "a,b c", 0},
		{"twenty of 25", many, strings.Join(many[:20], ",") + ",... (25 columns)", 0},
		{"control byte", []string{"a", "\x1b[2J"}, `a,"\x1b[2J"`, 0},
		{"long", []string{strings.Repeat("x", 90)}, `"` + strings.Repeat("x", 80) + `"... (90 bytes)`, 0},
		{"a thousand wide names", wide, "", 600},
		{"twenty names of control bytes", slices.Repeat([]string{strings.Repeat("\x15", 80)}, 20), "", 900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := headList(tc.in)
			if tc.want != "" && got != tc.want {
				t.Errorf("headList: %.200s, want %.200s", got, tc.want)
			}
			if tc.atMost > 0 && (len(got) > tc.atMost || !strings.HasSuffix(got, " columns)")) {
				t.Errorf("headList: %d bytes: %.200s", len(got), got)
			}
		})
	}
}
