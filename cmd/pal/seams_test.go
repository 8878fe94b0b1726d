package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/palsched/pal/internal/cliroot/clitest"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
)

// simJSON runs pal sim -o json and decodes its runs.
func simJSON(t *testing.T, args ...string) (map[string]string, []map[string]any) {
	t.Helper()
	out, err := run(t, append(append([]string{"sim"}, args...), "-o", "json")...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	var doc struct {
		Inputs map[string]string `json:"inputs"`
		Runs   []map[string]any  `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return doc.Inputs, doc.Runs
}

// Under --tenancy hived each VC runs the placement of its row on its view
// of its cells, so the six default placements give six different results,
// and the header says the placement is used. (They once printed six
// identical rows.)
func TestSimHivedRunsEachPlacement(t *testing.T) {
	in, runs := simJSON(t, "--tenancy", "hived")
	if len(runs) != 6 {
		t.Fatalf("%d runs, want the 6 default placements", len(runs))
	}
	seen := map[float64]string{}
	for _, r := range runs {
		jct := r["avg_jct_s"].(float64)
		if p, dup := seen[jct]; dup {
			t.Errorf("%s and %s both give avg JCT %v: the placement is not used", p, r["placement"], jct)
		}
		seen[jct] = r["placement"].(string)
	}
	// Golden (seed 42, pinned inputs): PAL against packed-sticky inside the one VC.
	if runs[0]["placement"] != "pal" || runs[0]["avg_jct_s"] != 32970.99 || runs[1]["placement"] != "packed-sticky" || runs[1]["avg_jct_s"] != 29467.74 {
		t.Errorf("pal / packed-sticky: %v %v / %v %v, want 32970.99 / 29467.74", runs[0]["placement"], runs[0]["avg_jct_s"], runs[1]["placement"], runs[1]["avg_jct_s"])
	}
	if !strings.Contains(in["tenancy"], "each VC runs its own scheduler and placement") {
		t.Errorf("tenancy header %q does not say the placement is used", in["tenancy"])
	}
}

// Themis places as well as schedules: a --placement list with it is an
// error rather than silently ignored.
func TestSimThemisRefusesPlacement(t *testing.T) {
	_, err := run(t, "sim", "--scheduler", "themis", "--placement", "pal,pm-first")
	if err == nil || !strings.Contains(err.Error(), "--placement pal,pm-first: --scheduler themis places every job itself") {
		t.Fatalf("got %v", err)
	}
}

// With --cells the cluster is the cells file's: a --cluster that
// disagrees is an error, one that agrees is accepted, and without
// --cluster the header shows the cells' shape.
func TestSimCellsClusterMustAgree(t *testing.T) {
	cells, trace := "../../tenancy/testdata/h3.yaml", "../../tenancy/testdata/h3-trace.csv"
	base := []string{"--trace", trace, "--cells", cells, "--tenancy", "quota", "--placement", "pal"}
	_, err := run(t, append([]string{"sim", "--cluster", "4x4"}, base...)...)
	if err == nil || !strings.Contains(err.Error(), "--cluster 4x4: the cells file "+cells+" describes a 2x4 cluster") {
		t.Fatalf("disagreeing --cluster: %v", err)
	}
	in, _ := simJSON(t, append([]string{"--cluster", "2x4"}, base...)...)
	if in["cluster"] != "2x4" {
		t.Errorf("agreeing --cluster: cluster %q", in["cluster"])
	}
	if in, _ = simJSON(t, base...); in["cluster"] != "2x4" {
		t.Errorf("no --cluster: header cluster %q, want the cells' 2x4", in["cluster"])
	}
}

// Every tenancy mode is named where --cells or --tenancy is refused.
func TestTenancyErrorsNameEveryMode(t *testing.T) {
	for _, args := range [][]string{{"--cells", "x.yaml"}, {"--tenancy", "hivedd"}} {
		_, err := run(t, append([]string{"sim"}, args...)...)
		if err == nil {
			t.Fatalf("%v accepted", args)
		}
		for _, m := range []string{"quota", "hived,", "hived-pm", "private"} {
			if !strings.Contains(err.Error()+",", m) {
				t.Errorf("%v: %q does not name %s", args, err, strings.TrimSuffix(m, ","))
			}
		}
	}
}

// --node-events works under both HiveD modes and names both when refused.
func TestNodeEventsNameBothHivedModes(t *testing.T) {
	ev := filepath.Join(t.TempDir(), "ev.csv")
	os.WriteFile(ev, []byte("time_s,node,event\n600,node-0,down\n"), 0o644)
	base := []string{"sim", "--trace", "../../tenancy/testdata/h3-trace.csv", "--cells", "../../tenancy/testdata/h3.yaml", "--placement", "pal", "--node-events", ev}
	_, err := run(t, append(base, "--tenancy", "quota")...)
	if err == nil || !strings.Contains(err.Error(), "needs --tenancy hived, hived-pm or hived-speed") {
		t.Errorf("quota: %v", err)
	}
	for _, m := range []string{"hived", "hived-pm"} {
		if out, err := run(t, append(base, "--tenancy", m)...); err != nil {
			t.Errorf("%s: %v\n%s", m, err, out)
		}
	}
}

// A too-long row is reported against the column it came from: duration_s
// rows name duration_s (and are not told that they count iterations);
// duration rows name duration with the iterations reminder.
func TestTooLongRowNamesItsColumn(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text, field string
		hint              bool
	}{
		{"secs.csv", "job_id,num_gpus,submit_time,duration_s\n0,1,0,100\n1,1,0,1e13\n", `secs.csv:3: field "duration_s": job 1 runs 1e+13 s on a median GPU`, false},
		{"iters.csv", "job_id,num_gpus,submit_time,duration,model\n0,1,0,100,vgg19\n1,1,0,1e13,vgg19\n", `iters.csv:3: field "duration": job 1 runs 1e+13 iterations x`, true},
	} {
		p := filepath.Join(dir, tc.name)
		os.WriteFile(p, []byte(tc.text), 0o644)
		_, err := run(t, "sim", "--trace", p, "--placement", "pal")
		if err == nil || !strings.Contains(err.Error(), tc.field) || strings.Contains(err.Error(), "counts iterations") != tc.hint {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	p := filepath.Join(dir, "long.csv")
	os.WriteFile(p, []byte("job_id,num_gpus,submit_time,duration_s\n0,1,0,4e7\n"), 0o644)
	out, err := run(t, "sim", "--trace", p, "--placement", "pal")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `long.csv:2: field "duration_s": job 0 runs 4e+07 s (1.3 years)`) || strings.Contains(out, "counts iterations") {
		t.Errorf("warning about a long duration_s row:\n%s", out)
	}
}

// pal --help says how to build a binary whose --version names its commit
// (cliroot's test checks the version string itself).
func TestHelpSaysHowToStampTheCommit(t *testing.T) {
	help, _ := run(t, "--help")
	if !strings.Contains(help, "go build -buildvcs=true") {
		t.Errorf("pal --help does not say how to build a binary that names its commit")
	}
}

// pal sim --help names every placement place.New knows and every trace
// column the reader accepts; pal cells --help names the tenancy columns.
func TestHelpNamesEveryPlacementAndColumn(t *testing.T) {
	help, _ := run(t, "sim", "--help")
	for _, p := range append(append(place.Names(), place.MigrationAwareNames()...), "spread") {
		if !regexp.MustCompile(`[ (:,]` + regexp.QuoteMeta(p) + `[,;) ]`).MatchString(help) {
			t.Errorf("sim --help does not list placement %s", p)
		}
	}
	for _, c := range workload.TraceKnown {
		if !regexp.MustCompile(`(?m)^  (\S+, )*` + c + `\b`).MatchString(help) {
			t.Errorf("sim --help does not describe trace column %s", c)
		}
	}
	cells, _ := run(t, "cells", "--help")
	for _, c := range []string{"vc", "priority", "pod_gpus", "pinned_cell", "leaf_cell_type"} {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(cells) {
			t.Errorf("cells --help does not describe trace column %s", c)
		}
	}
}

// sweep shows each column with its unit's digits, as pal sim does: the
// grid's loads as given, avg JCT to 0.01 s, other seconds whole, the
// comparison to 0.1 %, utilisation to 0.001.
func TestSweepUnitPrecision(t *testing.T) {
	out, err := run(t, "sweep", "--placement", "pal,packed-sticky", "--load", "2.5")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`│ sia-philly/1 │ +2\.5 │ +1\.7 │ +42 │ fifo +│ pal +│ +160 │ +(\d+\.\d\d) │ +(-?\d+\.\d) │ +(\d+) │ +(\d+) │ +(0\.\d\d\d) │`)
	if !row.MatchString(out) {
		t.Fatalf("pal row not in unit precision:\n%s", out)
	}
	// The same run in pal sim: the same figures, the same digits.
	_, runs := simJSON(t, "--placement", "pal,packed-sticky", "--extra-load", "2.5")
	m := row.FindStringSubmatch(out)
	if m[1] != f2(runs[0]["avg_jct_s"].(float64)) || m[4] != f0(runs[0]["makespan_s"].(float64)) {
		t.Errorf("sweep %s / %s, sim %v / %v", m[1], m[4], runs[0]["avg_jct_s"], runs[0]["makespan_s"])
	}
}

// pal themis sim prints seconds, as pal sim does, and its table shows
// what its JSON holds.
func TestThemisSimSeconds(t *testing.T) {
	args := []string{"themis", "sim", "--apps", "4", "--rate", "4", "--cluster", "2x4", "--max-jobs", "3", "--max-hours", "2", "--policy", "themis,srtf"}
	table, err := run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "│ avg JCT (s) │ makespan (s) │") || strings.Contains(table, "(h)") {
		t.Fatalf("units:\n%s", table)
	}
	js, err := run(t, append(args, "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Policy string
			Jobs   struct {
				AvgJCT   float64 `json:"avg_jct_s"`
				Makespan float64 `json:"makespan_s"`
			} `json:"jobs"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Runs) != 2 {
		t.Fatalf("%v\n%s", err, js)
	}
	for _, r := range doc.Runs {
		if r.Jobs.AvgJCT < 60 || !strings.Contains(table, "│ "+f2(r.Jobs.AvgJCT)+" ") || !strings.Contains(table, "│ "+f0(r.Jobs.Makespan)+" ") {
			t.Errorf("%s: JSON avg JCT %v s, makespan %v s not in the table:\n%s", r.Policy, r.Jobs.AvgJCT, r.Jobs.Makespan, table)
		}
	}
}

// One vocabulary over every command of the tree: -o is the output format
// and nothing else, every results command defaults to the same format,
// --out is a path, no Go type name shows in help, table headers are in
// lower case (acronyms aside), times are in seconds, and JSON carries no
// float noise.
func TestEveryCommandOneVocabulary(t *testing.T) {
	commands, flags := clitest.CheckFlags(t, newRootCmd(), DefaultOutput, nil)
	if commands < 22 || flags < 150 {
		t.Fatalf("walked only %d commands, %d flags", commands, flags)
	}

	dir := t.TempDir()
	apps := filepath.Join(dir, "apps.csv")
	if _, err := run(t, "trace", "themis", "--apps", "4", "--rate", "4", "--max-jobs", "3", "--max-hours", "2", "--out", apps); err != nil {
		t.Fatal(err)
	}
	results := [][]string{
		{"sim", "--placement", "pal,packed-sticky"},
		{"sweep", "--placement", "pal"},
		{"themis", "sim", "--trace", apps, "--cluster", "2x4", "--policy", "themis,gavel"},
		{"sim", "--trace", apps, "--cluster", "2x4", "--scheduler", "themis"},
		{"bench", "placement", "--cluster", "2x4", "--reps", "3"},
		{"bench", "auction", "--case", "10@4x4", "--reps", "2"},
		{"bench", "tenancy", "--nodes", "8", "--vcs", "2", "--reps", "5"},
		{"classify"},
		{"profile", "show"},
	}
	acronym := map[string]bool{"JCT": true, "GPU": true, "GPUs": true, "GPU-s": true, "RSS": true, "MB": true, "VC": true, "VCs": true, "L": true}
	word := regexp.MustCompile(`[A-Za-zΑ-Ωα-ω][A-Za-zΑ-Ωα-ω-]*`)
	noisy := regexp.MustCompile(`^-?\d+\.(\d{3,})$`)
	for _, args := range results {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		lines := strings.Split(out, "\n")
		for i, l := range lines {
			// The header row: the first │ row after a ┌ line.
			if i == 0 || !strings.HasPrefix(lines[i-1], "┌") {
				continue
			}
			for _, w := range word.FindAllString(l, -1) {
				if w == strings.ToUpper(w) && len([]rune(w)) > 1 && !acronym[w] {
					t.Errorf("%v: upper-case header word %q in %q", args, w, l)
				}
				if strings.Contains(l, "(h)") || strings.Contains(l, "(min)") {
					t.Errorf("%v: header %q: times are in seconds", args, l)
				}
			}
		}
		out, err = run(t, append(args, "-o", "json")...)
		if err != nil {
			t.Fatalf("%v -o json: %v", args, err)
		}
		var doc any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v -o json: %v\n%s", args, err, out)
		}
		numbers := 0
		var check func(key string, v any)
		check = func(key string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					check(k, e)
				}
			case []any:
				for _, e := range x {
					check(key, e)
				}
			case float64:
				numbers++
				s := strconv.FormatFloat(x, 'f', -1, 64)
				m := noisy.FindStringSubmatch(s)
				if m == nil {
					return
				}
				sig := len(strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(s, "-"), ".", ""), "0"))
				if sig > 6 && len(m[1]) > 2 {
					t.Errorf("%v -o json: %s = %s: more digits than any output shows", args, key, s)
				}
			}
		}
		check("", doc)
		if numbers == 0 {
			t.Errorf("%v -o json: no numbers", args)
		}
	}
}
