package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The README's Themis examples print what the README quotes: every ```sh
// block holding one `go run ./cmd/pal themis ...` command is run, and its
// output must equal the next fenced block (```json: as JSON values; ```text:
// line by line, trailing spaces aside).
func TestREADMEThemisExamples(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	block := func(from int) (lang string, body []string, end int) {
		for i := from; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "```") {
				lang = strings.TrimPrefix(lines[i], "```")
				for j := i + 1; j < len(lines); j++ {
					if strings.HasPrefix(lines[j], "```") {
						return lang, lines[i+1 : j], j + 1
					}
				}
			}
		}
		return "", nil, len(lines)
	}
	n := 0
	for i := 0; i < len(lines); {
		lang, body, end := block(i)
		if body == nil {
			break
		}
		i = end
		if lang != "sh" || len(body) != 1 || !strings.HasPrefix(body[0], "go run ./cmd/pal themis ") {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(body[0], "go run ./cmd/pal "))
		for k, a := range args {
			if strings.HasPrefix(a, "fairness/") {
				args[k] = "../../" + a
			}
		}
		want, wbody, next := block(end)
		if wbody == nil {
			t.Fatalf("%s: no quoted output after it", body[0])
		}
		i = next
		n++
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%s: %v", body[0], err)
		}
		switch want {
		case "json":
			var g, w any
			if err := json.Unmarshal([]byte(out), &g); err != nil {
				t.Fatalf("%s: output is not JSON: %v", body[0], err)
			}
			if err := json.Unmarshal([]byte(strings.Join(wbody, "\n")), &w); err != nil {
				t.Fatalf("%s: the README's JSON: %v", body[0], err)
			}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			if string(gj) != string(wj) {
				t.Errorf("%s prints\n%s\nthe README quotes\n%s", body[0], gj, wj)
			}
		default:
			got := strings.Split(strings.TrimRight(out, "\n"), "\n")
			for k := range got {
				got[k] = strings.TrimRight(got[k], " ")
			}
			for k := range wbody {
				wbody[k] = strings.TrimRight(wbody[k], " ")
			}
			if strings.Join(got, "\n") != strings.Join(wbody, "\n") {
				t.Errorf("%s prints\n%s\nthe README quotes\n%s", body[0], strings.Join(got, "\n"), strings.Join(wbody, "\n"))
			}
		}
	}
	if n < 2 {
		t.Errorf("found %d Themis examples in the README, want at least 2", n)
	}
}
