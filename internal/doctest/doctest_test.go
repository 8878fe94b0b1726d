package doctest

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	page := strings.Join([]string{
		"# Title",                         // 1
		"",                                // 2
		"```sh",                           // 3
		"# a comment",                     // 4
		"pal sim --trace sia-philly/3 \\", // 5
		"  --placement pal",               // 6
		"```",                             // 7
		`<!-- doctest: expect "106,396.16" "a \"b\"" -->`, // 8
		"", // 9
		"gives 106,396.16 s, −42.9% and 1.5x, for `--rate 0.5` on 16x4 with Kubernetes 1.37.2.", // 10
		"",                              // 11
		"```go",                         // 12
		"x := 1.5",                      // 13
		"```",                           // 14
		"```sh",                         // 15
		"pal themis sim",                // 16
		"```",                           // 17
		"<!-- doctest: output -->",      // 18
		"```json",                       // 19
		`{"a": 1}`,                      // 20
		"```",                           // 21
		"```sh",                         // 22
		"pal scheduler --config x.yaml", // 23
		"```",                           // 24
		"<!-- doctest: skip TestSchedulerBinds -->", // 25
		"```sh",                             // 26
		"pal reproduce --out out",           // 27
		"```",                               // 28
		`<!-- doctest: slow expect "x" -->`, // 29
	}, "\n")
	bs, err := Parse("p.md", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 {
		t.Fatalf("%d blocks, want 4: %+v", len(bs), bs)
	}
	if b := bs[3]; !b.Slow || b.Kind != Expect || bs[0].Slow {
		t.Errorf("slow: %+v", b)
	}
	b := bs[0]
	if b.Line != 3 || len(b.Commands) != 1 || b.Commands[0].Line != 5 || b.Commands[0].Text != "pal sim --trace sia-philly/3 --placement pal" {
		t.Errorf("block 1 commands: %+v", b)
	}
	if b.Kind != Expect || !slices.Equal(b.Expect, []string{"106,396.16", `a "b"`}) {
		t.Errorf("block 1 directive: %q %q", b.Kind, b.Expect)
	}
	if b.ProseLine != 10 || !slices.Equal(b.Figures, []string{"106,396.16", "42.9%", "1.5x"}) {
		t.Errorf("block 1 prose at %d, figures %q", b.ProseLine, b.Figures)
	}
	if b := bs[1]; b.Kind != Output || b.WantLang != "json" || !slices.Equal(b.Want, []string{`{"a": 1}`}) {
		t.Errorf("block 2: %+v", b)
	}
	if b := bs[2]; b.Kind != Skip || b.Test != "TestSchedulerBinds" {
		t.Errorf("block 3: %+v", b)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, page, want string }{
		{"unclosed", "a\n```sh\npal sim\n", "p.md:2: fenced block never closed"},
		{"empty", "```sh\n# only a comment\n```\n", "p.md:1: sh block without a command"},
		{"dangling continuation", "```sh\npal sim \\\n```\n", "p.md:2: command continues past the end"},
		{"unknown directive", "```sh\npal sim\n```\n<!-- doctest: expects \"1\" -->\n", `p.md:4: unknown doctest directive "expects"`},
		{"unterminated string", "```sh\npal sim\n```\n<!-- doctest: expect \"1 -->\n", "p.md:4: expect: unterminated string"},
		{"bare word", "```sh\npal sim\n```\n<!-- doctest: expect 1 -->\n", "p.md:4: expect: want a quoted string"},
		{"no strings", "```sh\npal sim\n```\n<!-- doctest: expect -->\n", "p.md:4: expect names no string"},
		{"skip without test", "```sh\npal sim\n```\n<!-- doctest: skip slow -->\n", "p.md:4: skip must name the test"},
		{"output without block", "```sh\npal sim\n```\n<!-- doctest: output -->\n\ntext\n", "p.md:4: output: no fenced block follows"},
		{"two lines", "```sh\npal sim\n```\n<!-- doctest: expect \"1\"\n-->\n", "p.md:4: doctest directive must be one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.md", []byte(tc.page))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFigures(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"PAL is −42.9% and PM-First -40.9% (geomean)", []string{"42.9%", "40.9%"}},
		{"3 of 11 VCs, 16x4 GPUs, 120 s", nil},
		{"214,576.16 s and 1,000 nodes", []string{"214,576.16", "1,000"}},
		{"within 1.5× of its base, `--speedup 2.5`", []string{"1.5×"}},
		{"kube-apiserver v1.37.2 and Go 1.26.0", nil},
	} {
		if got := Figures(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Figures(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParse: any page parses or fails with an error naming the file, in
// bounded time, and what it returns is consistent.
func FuzzParse(f *testing.F) {
	f.Add("```sh\npal sim\n```\n<!-- doctest: expect \"1.5\" -->\ngives 1.5x\n")
	f.Add("```sh\npal a \\\n b\n```\n<!-- doctest: output -->\n```text\nx\n```\n")
	f.Add("~~~sh\nx\n~~~\n<!-- doctest: skip TestX -->\n")
	f.Add("```sh\n```\n")
	f.Add("<!-- doctest: figures out/a.csv -->\n| a | 29,337 |\n\n<!-- doctest: cited \"x\" -->\n1.5%\n")
	f.Add("<!-- doctest: slow figures a -->\n```text\n1.5\n```\n")
	// Directives holding long runs of invalid and control bytes (which %q
	// writes four characters each), where a name, a path or a string goes.
	long, ctl := strings.Repeat("\xff", 8000), strings.Repeat("\x01", 8000)
	for _, d := range []string{long, "skip " + long, "expect \"" + long, "expect " + ctl, "timing " + long} {
		f.Add("```sh\npal sim\n```\n<!-- doctest: " + d + " -->\ngives 1.5x\n")
	}
	for _, d := range []string{ctl, "figures /" + long, "example " + ctl} {
		f.Add("<!-- doctest: " + d + " -->\ngives 1.5x\n")
	}
	f.Fuzz(func(t *testing.T, page string) {
		if qs, err := Quotes("f.md", []byte(page)); err != nil {
			if !strings.HasPrefix(err.Error(), "f.md") {
				t.Fatalf("error does not name the file: %.300v", err)
			}
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("Quotes: error of %d bytes: %.300s", n, err)
			}
		} else {
			for _, q := range qs {
				if len(q.Figures) == 0 || q.Line < 1 || q.Kind == FromFiles && len(q.Files) == 0 {
					t.Fatalf("quote without figures, line or files: %+v", q)
				}
			}
		}
		bs, err := Parse("f.md", []byte(page))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.md") {
				t.Fatalf("error does not name the file: %.300v", err)
			}
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("Parse: error of %d bytes: %.300s", n, err)
			}
			return
		}
		for _, b := range bs {
			if len(b.Commands) == 0 || b.Line < 1 {
				t.Fatalf("block without commands or line: %+v", b)
			}
			if b.Kind == Skip && !strings.HasPrefix(b.Test, "Test") {
				t.Fatalf("skip without a test: %+v", b)
			}
		}
	})
}
