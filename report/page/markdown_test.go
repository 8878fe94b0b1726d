package page

import (
	"reflect"
	"testing"
)

func txt(s string) []mdInline { return []mdInline{{Text: s}} }

func TestParseMarkdown(t *testing.T) {
	cases := map[string]struct {
		src  string
		want []mdBlock
	}{
		"the top heading level becomes h3": {
			"## Top\n### Sub ###\n###### Deep",
			[]mdBlock{{Kind: "h3", Inline: txt("Top")}, {Kind: "h4", Inline: txt("Sub")}, {Kind: "h6", Inline: txt("Deep")}},
		},
		"paragraphs join lines": {
			"one\ntwo\n\nthree",
			[]mdBlock{{Kind: "p", Inline: txt("one two")}, {Kind: "p", Inline: txt("three")}},
		},
		"list with continuation": {
			"- a\n  more\n* b\ntext",
			[]mdBlock{{Kind: "ul", Items: [][]mdInline{txt("a more"), txt("b")}}, {Kind: "p", Inline: txt("text")}},
		},
		"code fence keeps text raw": {
			"```\n<b> | x\n  y\n```\nafter",
			[]mdBlock{{Kind: "pre", Code: "<b> | x\n  y"}, {Kind: "p", Inline: txt("after")}},
		},
		"unclosed fence runs to the end": {
			"```\nx",
			[]mdBlock{{Kind: "pre", Code: "x"}},
		},
		"pipe table with alignment and escapes": {
			"| a | b |\n| --- | ---:|\n| x\\|y | 2 |",
			[]mdBlock{{Kind: "table",
				Header: []mdCell{{Inline: txt("a")}, {Inline: txt("b"), Right: true}},
				Rows:   [][]mdCell{{{Inline: txt("x|y")}, {Inline: txt("2"), Right: true}}}}},
		},
		"table without separator has no header": {
			"|a|b|",
			[]mdBlock{{Kind: "table", Rows: [][]mdCell{{{Inline: txt("a")}, {Inline: txt("b")}}}}},
		},
		"inline code and bold": {
			"run `pal sim` **now** or *not* `open",
			[]mdBlock{{Kind: "p", Inline: []mdInline{
				{Text: "run "}, {Text: "pal sim", Code: true}, {Text: " "}, {Text: "now", Bold: true}, {Text: " or *not* `open"},
			}}},
		},
		"empty": {"\n\n", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := parseMarkdown(tc.src); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseMarkdown(%q) =\n%+v\nwant\n%+v", tc.src, got, tc.want)
			}
		})
	}
}

func FuzzParseMarkdown(f *testing.F) {
	f.Add("# h\n- a\n|x|y|\n|-|-|\n```\nc\n```\n`a` **b**")
	f.Fuzz(func(t *testing.T, s string) {
		for _, b := range parseMarkdown(s) {
			if b.Kind == "" {
				t.Fatal("block without a kind")
			}
		}
	})
}
