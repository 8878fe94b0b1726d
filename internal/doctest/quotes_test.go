package doctest

import (
	"slices"
	"strings"
	"testing"
)

func TestQuotes(t *testing.T) {
	page := strings.Join([]string{
		"# Results",                      // 1
		"",                               // 2
		"```sh",                          // 3
		"pal sim",                        // 4
		"```",                            // 5
		`<!-- doctest: expect "1.5" -->`, // 6
		"",                               // 7
		"gives 1.5 s.",                   // 8: the block's prose, not a quote
		"",                               // 9
		"<!-- doctest: figures out/a.csv rec.txt -->", // 10
		"| a | 29,337 |",          // 11
		"| b | 83% |",             // 12
		"",                        // 13
		"An unchecked 4.2% here.", // 14
		"",                        // 15
		"No figure: 3 nodes.",     // 16
		"",                        // 17
		`<!-- doctest: cited "the PAL paper" -->`, // 18
		"",                               // 19
		"The paper saw 20% slower GPUs.", // 20
		"```console",                     // 21
		"$ echo 9.9",                     // 22
		"```",                            // 23
		"After a console block, 7.5 s.",  // 24
		"<!-- doctest: slow figures out/s.md -->", // 25
		"1.48× better", // 26
	}, "\n")
	qs, err := Quotes("p.md", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		line  int
		kind  QuoteKind
		figs  []string
		files []string
		slow  bool
	}
	var got []row
	for _, q := range qs {
		got = append(got, row{q.Line, q.Kind, q.Figures, q.Files, q.Slow})
	}
	want := []row{
		{11, FromFiles, []string{"29,337", "83%"}, []string{"out/a.csv", "rec.txt"}, false},
		{14, Unchecked, []string{"4.2%"}, nil, false},
		{20, Cited, []string{"20%"}, nil, false},
		{24, Unchecked, []string{"7.5"}, nil, false},
		{26, FromFiles, []string{"1.48×"}, []string{"out/s.md"}, true},
	}
	if len(got) != len(want) {
		t.Fatalf("quotes %+v, want %+v", got, want)
	}
	for k := range want {
		g, w := got[k], want[k]
		if g.line != w.line || g.kind != w.kind || !slices.Equal(g.figs, w.figs) || !slices.Equal(g.files, w.files) || g.slow != w.slow {
			t.Errorf("quote %d: %+v, want %+v", k, g, w)
		}
	}
	if qs[2].Source != "the PAL paper" {
		t.Errorf("cited source %q", qs[2].Source)
	}
}

func TestQuotesErrors(t *testing.T) {
	for _, tc := range []struct{ name, page, want string }{
		{"dangling", "text\n\n<!-- doctest: timing -->\n", "p.md:3: a doctest directive with no paragraph after it"},
		{"no figure", "<!-- doctest: timing -->\nthree nodes\n", "p.md:1: a doctest directive before a paragraph that quotes no figure"},
		{"before heading", "<!-- doctest: inputs -->\n# 1.5\n", "p.md:1: a directive before a heading"},
		{"before fence", "<!-- doctest: inputs -->\n```text\n1.5\n```\n", "p.md:1: the directive's paragraph is a fenced block"},
		{"two", "<!-- doctest: inputs -->\n<!-- doctest: timing -->\n1.5\n", "p.md:2: two directives before one paragraph"},
		{"unknown", "<!-- doctest: figurs a.txt -->\n1.5\n", `p.md:1: unknown doctest directive "figurs"`},
		{"no file", "<!-- doctest: figures -->\n1.5\n", "p.md:1: figures names no file"},
		{"outside", "<!-- doctest: figures ../x.txt -->\n1.5\n", "p.md:1: figures: ../x.txt must be a path inside"},
		{"slow timing", "<!-- doctest: slow timing -->\n1.5\n", "p.md:1: only figures can be slow"},
		{"cited unquoted", "<!-- doctest: cited paper -->\n1.5\n", "p.md:1: cited names its source as one quoted string"},
		{"timing with args", "<!-- doctest: timing x -->\n1.5\n", "p.md:1: timing takes nothing after it"},
		{"on block prose", "```sh\npal sim\n```\n\n<!-- doctest: inputs -->\n1.5\n", "the block's directive checks that paragraph"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Quotes("p.md", []byte(tc.page))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	nums := Numbers("avg_jct_s,recovered\n29337.12,0.831\n1.4812 x, 3,150.00 and 7 and 0.8\n1,2.4960,12\n")
	if want := []string{"29337.12", "0.831", "1.4812", "3150.00", "3", "150.00", "7", "0.8", "1", "2.4960", "12"}; !slices.Equal(nums, want) {
		t.Fatalf("Numbers = %q, want %q", nums, want)
	}
	for _, tc := range []struct {
		fig  string
		want bool
	}{
		{"29,337", true},
		{"29,337.1", true},
		{"29,338", false},
		{"83%", true},   // 0.831 as a percent
		{"83.1%", true}, // 0.831 at one decimal of a percent
		{"84%", false},
		{"1.48×", true},
		{"1.5x", true},
		{"1.49", false},
		{"3,150.00", true},
		{"0.80", false}, // 0.8 was printed with one decimal: it does not stand for 0.80
		{"7", true},
		{"80%", false},   // nor does 0.8 stand for 80%
		{"2.50", true},   // a CSV field after another (1,2.4960)
		{"12.50", false}, // not the two fields read as one
	} {
		if got := Matches(tc.fig, nums); got != tc.want {
			t.Errorf("Matches(%q) = %v, want %v", tc.fig, got, tc.want)
		}
	}
}
