// Package fairness is Themis-style finish-time fairness: apps (groups of
// jobs, e.g. one hyper-parameter search), the fairness metric
// ρ = T_shared / T_ideal, the fairness knob that decides which apps may bid,
// and the partial-allocation (PA) auction that hands out offered GPUs.
//
// The definitions, with our [D] decisions where the paper leaves room or
// could not be verified:
//
//   - ρ(G) = ((now − arrival) + R / rate(G)) / T_id, with R the app's
//     remaining GPU-seconds at ideal placement and rate(G) = Σ_jobs
//     |G_j|·S(G_j)·speed(G_j). T_id is pluggable (Metric): Themis uses
//     W / min(C/N_avg, D_max); Gavel charges done work at its isolated
//     rate and adds the remaining work at 1/m of the cluster.
//   - The knob f admits the k = max(1, ⌊(1−f)·n⌋) worst-off apps that still
//     want GPUs, computed in integer millionths so that f = 0.8, n = 10
//     gives 2 (float64 gives 1).
//   - Bids are tables over bundle sizes, one best-packed bundle per useful
//     size (not subsets of the offer: that is exponential), valued by the
//     app's effective speed-up after the grant (Valuation; 1/ρ is an
//     option). The arbiter finds the proportional-fair choice of sizes by
//     dynamic programming, packs the chosen sizes onto disjoint GPUs
//     (larger first), and lets each winner keep the fraction
//     c_i = Π_{j≠i} u_j(G*) / Π_{j≠i} u_j(G*_{−i}) of its bundle (hidden
//     payment) in expectation: whole grants rounded up or down at random
//     from the seed (Payment; payment in lease time, the old round-down and
//     none are options). Leftovers are auctioned again among the next
//     worst-off apps that did not pay (Leftover; the older rules remain).
//
// Everything here is a pure function of its inputs; the simulator owns
// time, leases and job progress.
package fairness
