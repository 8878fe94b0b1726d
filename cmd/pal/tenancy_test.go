package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// h3Run runs scenario H3's trace (TESTDATA.md, hand-derived HiveD scenarios) through pal sim and returns the
// jobs-out rows keyed by job id.
func h3Run(t *testing.T, extra ...string) map[string]map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "jobs.csv")
	args := append([]string{"sim", "--trace", "../../tenancy/testdata/h3-trace.csv", "--cells", "../../tenancy/testdata/h3.yaml",
		"--round", "60", "--gpu-scores", "../../tenancy/testdata/h3-uniform-gpus.csv", "--check-invariants", "--jobs-out", out}, extra...)
	if text, err := run(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	recs := readJobsOut(t, out)
	rows := map[string]map[string]string{}
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows[m["job_id"]] = m
	}
	return rows
}

// H3 through pal sim: B's whole-node job starts at t = 100 min under quota
// with spread placement (A's 1-GPU jobs land 2 + 2), at t = 1 min under
// HiveD (A packs into one node), and at t = 1 min alone on its own node.
func TestSimH3QuotaVersusHiveD(t *testing.T) {
	cases := []struct {
		tenancy, start, delay, bNodes, aNodes string
	}{
		{"quota", "6000.00", "5940.00", "0", "0,1,0,1"},
		{"hived", "60.00", "0.00", "1", "0,0,0,0"},
		{"hived-pm", "60.00", "0.00", "1", "0,0,0,0"},
		{"private", "60.00", "0.00", "0", ""},
	}
	for _, c := range cases {
		rows := h3Run(t, "--tenancy", c.tenancy, "--placement", "spread")
		b := rows["4"]
		if b["first_start_s"] != c.start || b["wait_s"] != c.delay || b["vc"] != "B" || b["nodes"] != c.bNodes {
			t.Errorf("%s: B = %v, want start %s, delay %s on node %s", c.tenancy, b, c.start, c.delay, c.bNodes)
		}
		if c.aNodes != "" {
			var got []string
			for _, id := range []string{"0", "1", "2", "3"} {
				got = append(got, rows[id]["nodes"])
			}
			if strings.Join(got, ",") != c.aNodes {
				t.Errorf("%s: A's jobs on nodes %v, want %s", c.tenancy, got, c.aNodes)
			}
		}
	}
}

func TestSimTenancyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cells := "../../tenancy/testdata/h3.yaml"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--trace", write("vc.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,C\n"), "--tenancy", "hived", "--cells", cells},
			`vc.csv:2: field "vc": job 0: unknown VC "C" (the cells define A, B)`},
		{[]string{"--trace", write("novc.csv", "job_id,num_gpus,submit_time,duration_s\n0,1,0,60\n"), "--tenancy", "quota", "--cells", cells},
			`novc.csv:2: field "vc": job 0 names no VC and the cells define 2 (A, B)`},
		{[]string{"--trace", write("big.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,5,0,60,A\n"), "--tenancy", "quota", "--cells", cells},
			`big.csv:2: field "num_gpus": job 0 needs 5 GPUs but VC A holds 4`},
		{[]string{"--trace", write("pod.csv", "job_id,num_gpus,pod_gpus,submit_time,duration_s,vc\n0,2,2,0,60,A\n"), "--tenancy", "hived", "--cells", cells},
			`pod.csv:2: field "pod_gpus": job 0 has pods of 2 GPUs but the largest cell of VC A below a node holds 1`},
		{[]string{"--trace", write("bigpod.csv", "job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,priority\n0,8,8,0,60,A,-1\n"), "--tenancy", "hived", "--cells", cells},
			`bigpod.csv:2: field "pod_gpus": job 0 has pods of 8 GPUs but the largest node has 4`},
		{[]string{"--trace", write("bigpod2.csv", "job_id,num_gpus,pod_gpus,submit_time,duration_s\n0,8,8,0,60\n"), "--cluster", "2x4"},
			`bigpod2.csv:2: field "pod_gpus": job 0 has pods of 8 GPUs but the largest node of 2x4 has 4`},
		{[]string{"--trace", write("never.csv", "job_id,num_gpus,pod_gpus,submit_time,duration_s,vc\n0,4,1,0,60,A\n1,4,2,0,60,B\n2,8,4,0,60,B\n"), "--tenancy", "hived", "--cells", cells},
			`never.csv:4: field "num_gpus": job 2 needs 8 GPUs but VC B holds 4`},
		{[]string{"--trace", write("ok.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--cells", cells},
			"--cells ../../tenancy/testdata/h3.yaml needs --tenancy quota, hived, hived-pm, hived-speed or private"},
		{[]string{"--trace", write("ok2.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--tenancy", "fair"},
			`--tenancy "fair": want none, quota, hived, hived-pm, hived-speed or private`},
		{[]string{"--trace", write("ok3.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--tenancy", "hived", "--cells", write("bad.yaml", "physicalCluster: [\n")},
			"bad.yaml:"},
		// --cells-events: each change is checked before the first round.
		{[]string{"--trace", write("ok4.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--tenancy", "quota", "--cells", cells,
			"--cells-events", write("ev0.csv", "time_s,cells\n0,c.yaml\n")},
			"--cells-events " + filepath.Join(dir, "ev0.csv") + " needs --tenancy hived, hived-pm or hived-speed and --cells"},
		{[]string{"--trace", write("ok5.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--tenancy", "hived", "--cells", cells,
			"--cells-events", write("ev1.csv", "time_s,cells\n60,"+abs(t, cells)+"\n30,"+abs(t, cells)+"\n")},
			`ev1.csv:3: field "time_s": 30 s is negative or before the previous change`},
		{[]string{"--trace", write("ok6.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--tenancy", "hived", "--cells", cells,
			"--cells-events", write("ev2.csv", "time_s,cells,why\n60,x.yaml,y\n")},
			`ev2.csv:1: field "why": unknown column (known columns: time_s,cells`},
		{[]string{"--trace", write("ok7.csv", "job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,60,A\n"), "--tenancy", "hived", "--cells", cells,
			"--cells-events", write("ev3.csv", "time_s,cells\n60,"+write("three.yaml", strings.Replace(mustReadFile(t, cells), "node-1}", "node-1}\n  - {cellType: NODE, cellAddress: node-2}", 1))+"\n")},
			`ev3.csv:2: field "cells": ` + filepath.Join(dir, "three.yaml") + `: 3 nodes; the cluster has 2`},
		{[]string{"--trace", write("ok8.csv", "job_id,num_gpus,pod_gpus,submit_time,duration_s,vc\n0,3,1,0,60,A\n"), "--tenancy", "hived", "--cells", cells,
			"--cells-events", write("ev4.csv", "time_s,cells\n60,"+write("small.yaml", strings.Replace(mustReadFile(t, cells), "cellType: NODE.GPU, cellNumber: 4", "cellType: NODE.GPU, cellNumber: 2", 1))+"\n")},
			`ev4.csv:2: field "cells": under ` + filepath.Join(dir, "small.yaml") + ": " + filepath.Join(dir, "ok8.csv") + `:2: field "num_gpus": job 0 needs 3 GPUs but VC A holds 2`},
	}
	for _, c := range cases {
		_, err := run(t, append([]string{"sim", "--placement", "spread"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

// Without a cells file, tenancy means one VC holding the whole --cluster.
func TestSimTenancyDefaultVC(t *testing.T) {
	out, err := run(t, "sim", "--tenancy", "hived", "--placement", "packed-sticky", "--check-invariants", "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `one VC \"default\" holding every node`) {
		t.Fatalf("no default VC in %s", out)
	}
}

// A node failure under HiveD: node-1 is down from t = 0 to t = 600 s, so
// B's whole-node cell has no healthy node and B waits until it comes back;
// A's 1-GPU jobs run on node-0 throughout.
func TestSimNodeEvents(t *testing.T) {
	ev := filepath.Join(t.TempDir(), "events.csv")
	if err := os.WriteFile(ev, []byte("time_s,node,event\n0,node-1,down\n600,node-1,up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := h3Run(t, "--tenancy", "hived", "--placement", "spread", "--node-events", ev)
	if b := rows["4"]; b["first_start_s"] != "600.00" || b["nodes"] != "1" {
		t.Fatalf("B = %v, want a start at 600 s on node 1", b)
	}
	for _, id := range []string{"0", "1", "2", "3"} {
		if a := rows[id]; a["first_start_s"] != "0.00" || a["nodes"] != "0" {
			t.Fatalf("A's job %s = %v, want a start at 0 on node 0", id, a)
		}
	}
	// The events file shaped the result, so the run says so among its inputs.
	out, err := run(t, "sim", "--trace", "../../tenancy/testdata/h3-trace.csv", "--cells", "../../tenancy/testdata/h3.yaml", "--tenancy", "hived", "--placement", "spread", "--node-events", ev)
	if err != nil || !strings.Contains(out, "; 2 node event(s) from "+ev) {
		t.Errorf("the inputs do not name the node events (%v):\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	for _, c := range []struct{ text, want string }{
		{"time_s,node,event\n0,node-9,down\n", `bad.csv:2: field "node": unknown node "node-9" (the cluster's nodes: node-0, node-1)`},
		{"time_s,node,event\n0,node-1,off\n", `bad.csv:2: field "event": "off" is not down or up`},
		{"time_s,node,event\n10,node-1,down\n5,node-1,up\n", `bad.csv:3: field "time_s": 5 s is negative or before the previous event`},
	} {
		if err := os.WriteFile(bad, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, "sim", "--trace", "../../tenancy/testdata/h3-trace.csv", "--cells", "../../tenancy/testdata/h3.yaml", "--tenancy", "hived", "--placement", "spread", "--node-events", bad)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if _, err := run(t, "sim", "--trace", "../../tenancy/testdata/h3-trace.csv", "--cells", "../../tenancy/testdata/h3.yaml", "--tenancy", "quota", "--placement", "spread", "--node-events", ev); err == nil ||
		!strings.Contains(err.Error(), "needs --tenancy hived") {
		t.Errorf("quota with node events: %v", err)
	}
}

// pal trace philly-vc writes a trace and cells that pal sim accepts.
func TestTracePhillyVC(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "trace", "philly-vc", "--out", dir)
	if err != nil || !strings.Contains(out, "wrote 82229 jobs of 11 VCs") {
		t.Fatalf("%v: %s", err, out)
	}
	check, err := run(t, "cells", "check", filepath.Join(dir, "cells.yaml"))
	if err != nil || !strings.Contains(check, "1 chains, 352 nodes, 2816 devices, 11 VCs") {
		t.Fatalf("%v: %s", err, check)
	}
}

// A pod never spans nodes under any placement: packed-sticky would give
// job 2's one pod of 2 GPUs one GPU of each node, so it waits until a node
// has two free (job 0 ends at 600 s).
func TestSimPodsNeverSpanNodes(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(tr, []byte("job_id,num_gpus,pod_gpus,submit_time,duration_s\n0,3,,0,600\n1,3,,0,1200\n2,2,2,0,60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "jobs.csv")
	if _, err := run(t, "sim", "--trace", tr, "--cluster", "2x4", "--placement", "packed-sticky", "--round", "60",
		"--gpu-scores", "../../tenancy/testdata/h3-uniform-gpus.csv", "--jobs-out", out); err != nil {
		t.Fatal(err)
	}
	recs := readJobsOut(t, out)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	j2 := recs[3]
	if j2[col["job_id"]] != "2" || j2[col["first_start_s"]] != "600.00" || strings.Contains(j2[col["nodes"]], ";") {
		t.Fatalf("job 2: start %s on nodes %s, want 600.00 on one node", j2[col["first_start_s"]], j2[col["nodes"]])
	}
}

// Every placement runs under every tenancy mode without failing, with and
// without pinned GPU values.
func TestSimEveryPlacementUnderTenancy(t *testing.T) {
	for _, mode := range []string{"quota", "hived", "hived-pm", "private"} {
		for _, scores := range [][]string{nil, {"--gpu-scores", "../../tenancy/testdata/h3-uniform-gpus.csv"}} {
			args := append([]string{"sim", "--trace", "../../tenancy/testdata/h3-trace.csv", "--cells", "../../tenancy/testdata/h3.yaml",
				"--tenancy", mode, "--round", "60", "--check-invariants", "--placement", "pal,pm-first,packed-sticky,packed-nonsticky,random-sticky,random-nonsticky,spread"}, scores...)
			if out, err := run(t, args...); err != nil {
				t.Errorf("%s %v: %v\n%s", mode, scores, err, out)
			}
		}
	}
}

// A column an input format does not have is an error naming file, column
// and the known columns, in the trace, the node events and the GPU scores;
// --allow-extra-columns ignores it with a warning.
func TestUnknownColumns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	trace, err := os.ReadFile("../../tenancy/testdata/h3-trace.csv")
	if err != nil {
		t.Fatal(err)
	}
	// The h3 trace with a misspelt priority column: every job would run
	// at priority 0 and nothing would say so.
	lines := strings.Split(strings.TrimSpace(string(trace)), "\n")
	lines[0] += ",priorty"
	for i := 1; i < len(lines); i++ {
		lines[i] += ",1"
	}
	typo := write("typo.csv", strings.Join(lines, "\n")+"\n")
	events := write("events.csv", "time_s,node,event,why\n0,node-1,down,disk\n")
	scores := write("scores.csv", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD,PerfVar_classE\n0,0,1,1,1,1,1\n")
	base := []string{"sim", "--cells", "../../tenancy/testdata/h3.yaml", "--tenancy", "hived", "--placement", "spread", "--round", "60"}
	h3 := []string{"--trace", "../../tenancy/testdata/h3-trace.csv"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--trace", typo}, typo + `:1: unknown column "priorty" (known columns: job_id,num_gpus,submit_time,duration,model,duration_s,tracked,app,vc,priority,pod_gpus,pinned_cell,leaf_cell_type,batch_size,max_gpus; --allow-extra-columns ignores unknown columns)`},
		{append(h3, "--node-events", events), events + `:1: field "why": unknown column (known columns: time_s,node,event; --allow-extra-columns ignores unknown columns)`},
		{append(h3, "--gpu-scores", scores), scores + `:1: field "PerfVar_classE": unknown column (known columns: GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD,GPU_UUID,uuid,Local_GPU_ID,IP_addr,IN_USE,JOB_IDS,node_name,gpu_index; --allow-extra-columns ignores unknown columns)`},
	}
	for _, c := range cases {
		_, err := run(t, append(base, c.args...)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
	out, err := run(t, append(base, "--trace", typo, "--allow-extra-columns")...)
	if err != nil {
		t.Fatal(err)
	}
	if want := "warning: " + typo + ": ignoring unknown columns priorty (known columns: "; !strings.Contains(out, want) {
		t.Errorf("no warning %q in:\n%s", want, out)
	}
	// The flag does not stay on for the next command.
	if _, err := run(t, append(base, "--trace", typo)...); err == nil {
		t.Error("the escape hatch outlived its command")
	}
}

func mustReadFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
