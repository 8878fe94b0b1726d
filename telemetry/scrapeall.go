package telemetry

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Target is one exporter endpoint: its /metrics URL and, when known
// (an EndpointSlice says which node the exporter runs on), the node
// that names its GPUs whatever the exporter's Hostname label says.
type Target struct {
	URL  string
	Node string
}

// Scraped is what one target gave: its GPUs, or why none.
type Scraped struct {
	Target
	GPUs []GPU
	Err  error
}

// ScrapeAll reads every target, at most workers at once (at least one),
// each under its own timeout (0: only ctx's), and returns their results
// in the targets' order. A target that does not answer holds one worker
// for the timeout, not the whole scrape: a cluster of exporters takes
// about targets/workers times the slowest answer, not the sum of them.
// A GPU is named by its target's Node when it has one, else by the
// exporter's Hostname label, else by the URL's host.
func ScrapeAll(ctx context.Context, c *http.Client, targets []Target, workers int, timeout time.Duration) []Scraped {
	out := make([]Scraped, len(targets))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(workers, 1), len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = scrapeOne(ctx, c, targets[i], timeout)
			}
		}()
	}
	for i := range targets {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func scrapeOne(ctx context.Context, c *http.Client, t Target, timeout time.Duration) Scraped {
	host := t.Node
	if u, err := url.Parse(t.URL); err == nil && host == "" {
		host = u.Hostname() // for an exporter without a Hostname label
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	gs, err := Scrape(ctx, c, t.URL, host)
	if err != nil {
		return Scraped{Target: t, Err: err}
	}
	if t.Node != "" {
		for i := range gs {
			gs[i].Hostname = t.Node
		}
	}
	return Scraped{Target: t, GPUs: gs}
}

// Merge joins the targets' GPUs into one list to assess together. A GPU
// reported by two targets (one exporter listed twice, or two exporter
// pods on one node) is kept once, as the first target reported it:
// twice, it would count twice in the busy GPUs' median and be exported
// twice under the same labels, which fails every /metrics answer. dups
// names each GPU left out and the targets that reported it. Each
// result's GPUs count whatever its Err says (the scheduler gives a
// target that failed its last good scrape).
func Merge(res []Scraped) (all []GPU, dups []string) {
	type key struct {
		host string
		gpu  int
	}
	seen := map[key]string{}
	for _, r := range res {
		for _, g := range r.GPUs {
			k := key{g.Hostname, g.GPU}
			if first, ok := seen[k]; ok {
				dups = append(dups, g.Key()+" from "+r.URL+" (first from "+first+")")
				continue
			}
			seen[k] = r.URL
			all = append(all, g)
		}
	}
	return all, dups
}
