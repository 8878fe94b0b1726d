package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestScrapeAll: ScrapeAll reads the targets at most workers at a time,
// gives each its own timeout (one that hangs costs its worker the
// timeout, not the others their scrape), keeps the targets' order, names
// a target's GPUs by its Node when it has one (else by the exporter's
// Hostname label, else by the URL's host), and says of each target that
// failed why, naming its URL.
func TestScrapeAll(t *testing.T) {
	sample := serve(t, "testdata/dcgm-exporter-a100.txt") // Hostname gpu-node-001
	noHost := serve(t, "testdata/dcgm-exporter-old.txt")  // no Hostname label
	var inFlight, most atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(100 * time.Millisecond)
		http.Redirect(w, r, sample, http.StatusFound)
	}))
	t.Cleanup(slow.Close)
	stop := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(stop) })
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	for _, tc := range []struct {
		name    string
		targets []Target
		workers int
		timeout time.Duration
		most    int32          // the most slow targets in flight at once (0: not checked)
		host    []string       // each target's first GPU's Hostname ("": it failed)
		err     map[int]string // target: what its error says
		within  time.Duration
	}{
		{name: "named by Node, Hostname, URL", targets: []Target{{URL: sample, Node: "node-a"}, {URL: sample}, {URL: noHost}},
			workers: 2, timeout: time.Second, host: []string{"node-a", "gpu-node-001", "127.0.0.1"}, within: time.Second},
		{name: "8 at once", targets: repeat(Target{URL: slow.URL}, 24), workers: 8, timeout: 5 * time.Second, most: 8, within: 1200 * time.Millisecond},
		{name: "one at a time", targets: repeat(Target{URL: slow.URL}, 4), workers: 1, timeout: 5 * time.Second, most: 1, within: 2 * time.Second},
		{name: "more workers than targets", targets: repeat(Target{URL: slow.URL}, 3), workers: 16, timeout: 5 * time.Second, most: 3, within: time.Second},
		{name: "hung and gone", targets: []Target{{URL: hung.URL}, {URL: sample}, {URL: gone.URL}, {URL: hung.URL}, {URL: "not a url"}},
			workers: 2, timeout: 200 * time.Millisecond, host: []string{"", "gpu-node-001", "", "", ""},
			err: map[int]string{0: hung.URL, 2: gone.URL, 3: "deadline exceeded", 4: "unsupported protocol scheme"}, within: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			most.Store(0)
			start := time.Now()
			got := ScrapeAll(context.Background(), nil, tc.targets, tc.workers, tc.timeout)
			if took := time.Since(start); took > tc.within {
				t.Errorf("took %v, want at most %v", took, tc.within)
			}
			if len(got) != len(tc.targets) {
				t.Fatalf("%d results for %d targets", len(got), len(tc.targets))
			}
			for i, r := range got {
				if r.Target != tc.targets[i] {
					t.Errorf("result %d is of %+v, want %+v", i, r.Target, tc.targets[i])
				}
				want, failed := tc.err[i]
				switch {
				case failed && (r.Err == nil || !strings.Contains(r.Err.Error(), want) || r.GPUs != nil):
					t.Errorf("target %d: error %v (%d GPUs), want one saying %q", i, r.Err, len(r.GPUs), want)
				case !failed && tc.host != nil && tc.host[i] == "" && r.Err == nil:
					t.Errorf("target %d read", i)
				case !failed && (tc.host == nil || tc.host[i] != "") && (r.Err != nil || len(r.GPUs) == 0):
					t.Errorf("target %d: %v, %d GPUs", i, r.Err, len(r.GPUs))
				case !failed && tc.host != nil && tc.host[i] != "" && r.GPUs[0].Hostname != tc.host[i]:
					t.Errorf("target %d: GPUs named %s, want %s", i, r.GPUs[0].Hostname, tc.host[i])
				}
			}
			if tc.most != 0 && most.Load() != tc.most {
				t.Errorf("%d in flight at most, want %d", most.Load(), tc.most)
			}
		})
	}
}

func repeat(t Target, n int) []Target {
	out := make([]Target, n)
	for i := range out {
		out[i] = t
		out[i].URL = fmt.Sprintf("%s/metrics?%d", t.URL, i)
	}
	return out
}

// TestMerge: a GPU two targets report (one exporter listed twice, two
// exporter pods on one node) is kept once, as the first target reported
// it, and the others are named; a failed target adds nothing.
func TestMerge(t *testing.T) {
	g := func(host string, i int) GPU { return GPU{Hostname: host, GPU: i} }
	for _, tc := range []struct {
		name string
		in   []Scraped
		keys string
		dups []string
	}{
		{"apart", []Scraped{{Target: Target{URL: "a"}, GPUs: []GPU{g("n1", 0), g("n1", 1)}}, {Target: Target{URL: "b"}, GPUs: []GPU{g("n2", 0)}}},
			"n1/0 n1/1 n2/0", nil},
		{"twice", []Scraped{{Target: Target{URL: "a"}, GPUs: []GPU{g("n1", 0)}}, {Target: Target{URL: "b"}, GPUs: []GPU{g("n1", 0), g("n1", 1)}}},
			"n1/0 n1/1", []string{"n1/0 from b (first from a)"}},
		{"failed adds nothing", []Scraped{{Target: Target{URL: "a"}, Err: fmt.Errorf("gone")}, {Target: Target{URL: "b"}, GPUs: []GPU{g("n1", 0)}}},
			"n1/0", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, dups := Merge(tc.in)
			var keys []string
			for _, g := range all {
				keys = append(keys, g.Key())
			}
			if strings.Join(keys, " ") != tc.keys || fmt.Sprint(dups) != fmt.Sprint(tc.dups) {
				t.Errorf("got %v, dups %q; want %s, dups %q", keys, dups, tc.keys, tc.dups)
			}
		})
	}
}
