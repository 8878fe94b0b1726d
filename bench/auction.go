package bench

import (
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/palsched/pal/fairness"
)

// AuctionOptions describes one Themis-auction benchmark: a synthetic
// auction (fairness.RandomInput) held Reps times.
type AuctionOptions struct {
	Apps, Machines, GPUsPerMachine int
	F                              float64 // fairness knob
	HeldShare                      float64 // share of GPUs on unexpired leases
	Reps                           int     // 0 means 20
	Elastic                        bool    // elastic jobs instead of gangs
	Seed                           uint64
}

// AuctionStats are wall-clock milliseconds per auction.
type AuctionStats struct {
	MedianMS, P99MS, MeanMS float64
	Reps, GPUs, Offered     int
	Wanting, Bidders        int
	// AllocMB is the memory one auction allocates (mean over the reps);
	// MaxRSSMB is the process's peak resident memory so far (Linux
	// getrusage), which bounds what one auction needs at once.
	AllocMB, MaxRSSMB float64
}

// Auction times one auction of opts.
func Auction(opts AuctionOptions) (AuctionStats, error) {
	in, err := fairness.RandomInput(fairness.RandomOptions{Apps: opts.Apps, Machines: opts.Machines,
		GPUsPerMachine: opts.GPUsPerMachine, HeldShare: opts.HeldShare, Speeds: true, Elastic: opts.Elastic, Seed: opts.Seed})
	if err != nil {
		return AuctionStats{}, err
	}
	o := fairness.DefaultOptions()
	if o.Knob, err = fairness.NewKnob(opts.F); err != nil {
		return AuctionStats{}, err
	}
	reps := opts.Reps
	if reps <= 0 {
		reps = 20
	}
	ms := make([]float64, reps)
	var r *fairness.Result
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := range ms {
		start := time.Now()
		if r, err = fairness.Run(in, o); err != nil {
			return AuctionStats{}, fmt.Errorf("auction: %w", err)
		}
		ms[i] = float64(time.Since(start).Nanoseconds()) / 1e6
	}
	runtime.ReadMemStats(&m1)
	s := AuctionStats{Reps: reps, GPUs: in.Topo.NumGPUs(), Offered: len(in.Offer), Wanting: r.N, Bidders: r.K,
		AllocMB: float64(m1.TotalAlloc-m0.TotalAlloc) / float64(reps) / (1 << 20)}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.MaxRSSMB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	s.MedianMS, s.P99MS, s.MeanMS = timeSummary(ms)
	return s, nil
}
