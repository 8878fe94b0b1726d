package fairness

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/palsched/pal/internal/quote"
)

// Payment is how a winner pays PA's hidden payment: it keeps a c_i share
// of its proportional-fair bundle.
type Payment int

const (
	// PayOff keeps the whole bundle (the authors' simulator computes c_i
	// but never applies it).
	PayOff Payment = iota
	// PayRandom keeps c_i of the bundle in expectation: the kept number of
	// water-fill grants is rounded up or down at random, from the run's
	// seed, so that the expected GPUs kept are exactly c_i·|G*_i|. A lone
	// gang is kept with probability c_i. The default: PA is defined on
	// shares, and a lottery over whole grants is the share in
	// expectation; the withheld GPUs are free at once for the leftover
	// step, and every lease keeps one length.
	PayRandom
	// PayLease keeps the whole bundle for c_i of the lease: the payment is
	// charged in lease time (the GPUs are auctioned again sooner).
	PayLease
	// PayFloor keeps ⌊c_i·|G*_i|⌋ GPUs rounded down to whole grants: a gang
	// with any c_i < 1 keeps nothing. Kept only to measure that defect.
	PayFloor
)

func (p Payment) String() string {
	switch p {
	case PayOff:
		return "off"
	case PayRandom:
		return "random"
	case PayLease:
		return "lease"
	case PayFloor:
		return "floor"
	}
	return fmt.Sprintf("Payment(%d)", int(p))
}

// ParsePayment accepts off, on (= random), random, lease and floor.
func ParsePayment(s string) (Payment, error) {
	if s == "on" {
		return PayRandom, nil
	}
	for _, p := range []Payment{PayOff, PayRandom, PayLease, PayFloor} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown payment form %s (want on, off, random, lease or floor)", quote.Value(s))
}

// Valuation is what a bid's utility is.
type Valuation int

const (
	// ValueRho is u = 1/ρ after the grant (the paper-level summaries). It
	// is not homogeneous: elapsed time enters ρ.
	ValueRho Valuation = iota
	// ValueSpeedup is u = Σ_jobs |G_j|·S(G_j)·speed(G_j), the app's total
	// effective speed-up after the grant (the authors' simulator bids the
	// effective speed-up): homogeneous of degree 1, so PA's guarantees
	// hold for it.
	ValueSpeedup
)

func (v Valuation) String() string {
	switch v {
	case ValueRho:
		return "rho"
	case ValueSpeedup:
		return "speedup"
	}
	return fmt.Sprintf("Valuation(%d)", int(v))
}

// ParseValuation accepts rho and speedup.
func ParseValuation(s string) (Valuation, error) {
	switch s {
	case "", "rho":
		return ValueRho, nil
	case "speedup":
		return ValueSpeedup, nil
	}
	return 0, fmt.Errorf("unknown valuation %s (want rho or speedup)", quote.Value(s))
}

// roundGrants is expectation-preserving randomized rounding at grant
// granularity: with cum[p] GPUs after p grants and a target of c·cum[top]
// GPUs, it returns q or q+1 grants, where cum[q] <= target < cum[q+1],
// choosing q+1 with probability (target − cum[q]) / (cum[q+1] − cum[q]),
// so that E[cum[result]] = target. u is the uniform draw in [0, 1).
func roundGrants(cum []int, top int, c, u float64) int {
	if c >= 1 {
		return top
	}
	if !(c > 0) {
		return 0
	}
	target := c * float64(cum[top])
	q := 0
	for q < top && float64(cum[q+1]) <= target+1e-9 {
		q++
	}
	if q == top {
		return top
	}
	lo, hi := float64(cum[q]), float64(cum[q+1])
	if target-lo <= 1e-9 {
		return q
	}
	if u < (target-lo)/(hi-lo) {
		return q + 1
	}
	return q
}

// paymentDraw is the uniform draw in [0, 1) for app name's payment in the
// auction at now, from seed: the same seed and inputs give the same
// draws, and an app's draw does not depend on which other apps exist.
func paymentDraw(seed uint64, now float64, name string) float64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	x := splitmix(seed ^ splitmix(math.Float64bits(now)^splitmix(h.Sum64())))
	return float64(x>>11) / (1 << 53)
}
