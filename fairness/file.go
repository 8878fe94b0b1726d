package fairness

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/variability"
)

// MaxFileBytes bounds an auction file (4 MiB: tens of thousands of
// apps), so that a stray file is refused before the YAML parser holds it.
const MaxFileBytes = 4 << 20

// FileFormat documents the auction file, for --help and the README.
const FileFormat = `The input is YAML. GPU ids are machine × gpus_per_machine + index.

  cluster: 2x2                  # machines x GPUs per machine (required)
  machines_per_rack: 0          # optional; 0 = no racks
  now_s: 0                      # time of the auction (default 0)
  fairness_knob: 0.8            # f in [0, 1], at most 6 decimals (default 0.8)
  knob_rounding: floor          # floor | ceil of (1-f)·n (default floor)
  payments: on                  # hidden payments: on (= random) | random | lease | floor | off (default on)
                                #   random: keep c_i of the bundle in expectation (whole grants, drawn from seed)
                                #   lease: keep the bundle for c_i of the lease; floor: ⌊c_i·|bundle|⌋ (a gang keeps nothing)
  valuation: speedup            # speedup (bid Σ|G|·S(G), homogeneous) | rho (bid 1/ρ) (default speedup)
  leftover: reauction           # reauction (the next worst-off bid again) | nonbidders-first | bidders-only | none
                                #   (default reauction)
  metric: themis                # themis | gavel: the denominator of ρ (default themis)
  placement_blind: false        # bid as if spread factors were 1 (default false)
  variability_blind: false      # ignore gpu_scores in bids (default false)
  remaining_noise: 0            # p: each app's remaining work × U(1-p, 1+p) (default 0: oracle)
  seed: 1                       # seed of that noise and of the payment draws (default 1)
  gpu_scores:                   # optional PM-scores per class, one per GPU, time-like
    A: [1.0, 1.0, 1.2, 1.2]     #   (1 = median GPU; a gang runs at its slowest GPU)
  apps:                         # required, names unique
    - name: A
      arrival_s: 0              # <= now_s
      remaining_gpu_s: 14400    # remaining work at ideal placement
      total_gpu_s: 14400        # W, >= remaining_gpu_s
      max_gpus: 4               # D_max
      spread_factor: 0.5        # throughput factor when spread across machines (default 1)
      rack_factor: 0.5          # ... across racks (default spread_factor)
      class: A                  # application class for gpu_scores (default A)
      n_avg: 2                  # average contention since arrival (default: number of apps)
      iso_time_s: 0             # Gavel's isolated time of the done work (default: done work at min(C/m, max_gpus))
      held: []                  # GPU ids it keeps on unexpired leases
  offer: [0, 1, 2, 3]           # GPUs being auctioned (required): free or lease expired

The output is JSON:

  {"bidders": [names, worst-off first],
   "apps": {NAME: {"rho": ρ before the auction (null when +Inf: it holds no GPUs),
                   "bidder": bool,
                   "pf": GPUs of its proportional-fair bundle,
                   "keep_fraction": c_i (0 for apps that did not bid),
                   "kept": the part of pf it keeps after the hidden payment,
                   "final": every GPU it holds afterwards (held + kept + leftovers),
                   "lease_share": with payments: lease, the share of the lease kept is held for (absent when 1)}},
   "leftover": offered GPUs nobody got}
`

// AuctionFile is a parsed auction file.
type AuctionFile struct {
	Name  string
	Input Input
	Opt   Options
}

// AppOutput is one app in the auction command's JSON.
type AppOutput struct {
	Rho          *float64 `json:"rho"`
	Bidder       bool     `json:"bidder"`
	PF           []int    `json:"pf"`
	KeepFraction float64  `json:"keep_fraction"`
	Kept         []int    `json:"kept"`
	Final        []int    `json:"final"`
	// LeaseShare is the share of the lease Kept is held for, shown only
	// when it is below 1 (payments in lease time).
	LeaseShare *float64 `json:"lease_share,omitempty"`
}

// Output is the auction command's JSON.
type Output struct {
	Bidders  []string             `json:"bidders"`
	Apps     map[string]AppOutput `json:"apps"`
	Leftover []int                `json:"leftover"`
}

// Run holds the file's auction and renders the result.
func (f *AuctionFile) Run() (*Output, error) {
	r, err := Run(f.Input, f.Opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", f.Name, err)
	}
	out := &Output{Bidders: []string{}, Apps: map[string]AppOutput{}, Leftover: sortedCopy(r.Leftover)}
	for _, i := range r.Bidders {
		out.Bidders = append(out.Bidders, f.Input.Apps[i].Name)
	}
	for i, a := range f.Input.Apps {
		ar := r.Apps[i]
		o := AppOutput{Bidder: ar.Bidder, PF: sortedCopy(ar.PF), KeepFraction: ar.Keep, Kept: sortedCopy(ar.Kept), Final: sortedCopy(ar.Final)}
		if !math.IsInf(ar.Rho, 0) {
			rho := ar.Rho
			o.Rho = &rho
		}
		if ar.LeaseShare < 1 {
			s := ar.LeaseShare
			o.LeaseShare = &s
		}
		out.Apps[a.Name] = o
	}
	return out, nil
}

// fileErr is an error at a line of the file, naming the field.
type fileErr struct {
	file, field string
	line        int
	msg         string
}

func (e *fileErr) Error() string {
	if e.field == "" {
		return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg)
	}
	return fmt.Sprintf("%s:%d: field %q: %s", e.file, e.line, e.field, e.msg)
}

type parser struct {
	file string
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &fileErr{file: p.file, field: field, line: line, msg: fmt.Sprintf(format, args...)}
}

// fields walks a mapping node, rejecting unknown and repeated keys.
func (p *parser) fields(n *yaml.Node, where string, known []string, fn func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, where, "want a mapping of fields")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		full := name
		if where != "" {
			full = where + "." + name
		}
		ok := false
		for _, x := range known {
			ok = ok || x == name
		}
		if !ok {
			return p.errf(k, full, "unknown field (known: %s)", strings.Join(known, ", "))
		}
		if seen[name] {
			return p.errf(k, full, "given twice")
		}
		seen[name] = true
		if err := fn(name, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) float(v *yaml.Node, field string) (float64, error) {
	var x float64
	if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, p.errf(v, field, "want a finite number, got %q", v.Value)
	}
	return x, nil
}

func (p *parser) nonneg(v *yaml.Node, field string) (float64, error) {
	x, err := p.float(v, field)
	if err == nil && x < 0 {
		err = p.errf(v, field, "must be >= 0, got %v", x)
	}
	return x, err
}

// int reads a whole number. YAML would decode 1.99 into an int as 1, so
// anything not tagged as an integer is refused.
func (p *parser) int(v *yaml.Node, field string) (int, error) {
	var x int
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&x) != nil {
		return 0, p.errf(v, field, "want an integer, got %q", v.Value)
	}
	return x, nil
}

func (p *parser) bool(v *yaml.Node, field string) (bool, error) {
	var x bool
	if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil {
		return false, p.errf(v, field, "want true or false, got %q", v.Value)
	}
	return x, nil
}

func (p *parser) str(v *yaml.Node, field string) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", p.errf(v, field, "want a string")
	}
	return v.Value, nil
}

// gpuList reads a list of GPU ids in 0..n-1 without repeats.
func (p *parser) gpuList(v *yaml.Node, field string, n int) ([]int, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, p.errf(v, field, "want a list of GPU ids, e.g. [0, 1]")
	}
	out := make([]int, 0, len(v.Content))
	for i, e := range v.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		g, err := p.int(e, f)
		if err != nil {
			return nil, err
		}
		if g < 0 || g >= n {
			return nil, p.errf(e, f, "GPU %d does not exist (the cluster has GPUs 0..%d)", g, n-1)
		}
		for _, h := range out {
			if h == g {
				return nil, p.errf(e, f, "GPU %d listed twice", g)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

type fileApp struct {
	node                        *yaml.Node
	fields                      map[string]*yaml.Node
	name                        string
	arrival, remaining, total   float64
	maxGPUs                     int
	spread, rack, nAvg, isoTime float64
	class                       variability.Class
	held                        []int
}

// ParseAuctionFile reads an auction file (see FileFormat). Every error
// names the file, the line and the field.
func ParseAuctionFile(name string, data []byte) (*AuctionFile, error) {
	p := &parser{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: malformed YAML: %v", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s:1: empty file", name)
	}
	root := doc.Content[0]
	top := map[string]*yaml.Node{}
	known := []string{"cluster", "machines_per_rack", "now_s", "fairness_knob", "knob_rounding", "payments", "valuation", "leftover",
		"metric", "placement_blind", "variability_blind", "remaining_noise", "seed", "gpu_scores", "apps", "offer"}
	if err := p.fields(root, "", known, func(k string, v *yaml.Node) error { top[k] = v; return nil }); err != nil {
		return nil, err
	}
	for _, req := range []string{"cluster", "apps", "offer"} {
		if top[req] == nil {
			return nil, p.errf(root, req, "required")
		}
	}
	f := &AuctionFile{Name: name, Opt: DefaultOptions()}
	spec, err := p.str(top["cluster"], "cluster")
	if err != nil {
		return nil, err
	}
	machines, perMachine, err := cluster.ParseShape(spec)
	if err != nil {
		return nil, p.errf(top["cluster"], "cluster", "%v", strings.TrimPrefix(err.Error(), "--cluster "))
	}
	perRack := 0
	if v := top["machines_per_rack"]; v != nil {
		if perRack, err = p.int(v, "machines_per_rack"); err != nil {
			return nil, err
		}
		if perRack < 0 {
			return nil, p.errf(v, "machines_per_rack", "must be >= 0, got %d", perRack)
		}
	}
	topo, err := UniformTopology(machines, perMachine, perRack)
	if err != nil {
		return nil, p.errf(top["cluster"], "cluster", "%v", err)
	}
	nGPU := topo.NumGPUs()
	if v := top["now_s"]; v != nil {
		if f.Input.Now, err = p.nonneg(v, "now_s"); err != nil {
			return nil, err
		}
		if f.Input.Now > MaxNow {
			return nil, p.errf(v, "now_s", "%v s is past %d s: float64 cannot resolve a microsecond there, so ρ cannot tell bids apart", f.Input.Now, int64(MaxNow))
		}
	}
	if v := top["fairness_knob"]; v != nil {
		x, err := p.float(v, "fairness_knob")
		if err != nil {
			return nil, err
		}
		if f.Opt.Knob, err = NewKnob(x); err != nil {
			return nil, p.errf(v, "fairness_knob", "%v", err)
		}
	}
	if v := top["knob_rounding"]; v != nil {
		s, err := p.str(v, "knob_rounding")
		if err != nil {
			return nil, err
		}
		switch s {
		case "floor":
		case "ceil":
			f.Opt.Knob.Ceil = true
		default:
			return nil, p.errf(v, "knob_rounding", "want floor or ceil, got %q", s)
		}
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"placement_blind", &f.Opt.PlacementBlind}, {"variability_blind", &f.Opt.VariabilityBlind}} {
		if v := top[b.key]; v != nil {
			if *b.dst, err = p.bool(v, b.key); err != nil {
				return nil, err
			}
		}
	}
	if v := top["payments"]; v != nil {
		s, err := p.str(v, "payments")
		if err != nil {
			return nil, err
		}
		switch s {
		case "true":
			s = "on"
		case "false":
			s = "off"
		}
		if f.Opt.Payment, err = ParsePayment(s); err != nil {
			return nil, p.errf(v, "payments", "%v", err)
		}
	}
	if v := top["valuation"]; v != nil {
		s, err := p.str(v, "valuation")
		if err != nil {
			return nil, err
		}
		if f.Opt.Valuation, err = ParseValuation(s); err != nil {
			return nil, p.errf(v, "valuation", "%v", err)
		}
	}
	if v := top["leftover"]; v != nil {
		s, err := p.str(v, "leftover")
		if err != nil {
			return nil, err
		}
		if f.Opt.Leftover, err = ParseLeftover(s); err != nil {
			return nil, p.errf(v, "leftover", "%v", err)
		}
	}
	if v := top["metric"]; v != nil {
		s, err := p.str(v, "metric")
		if err != nil {
			return nil, err
		}
		if f.Opt.Metric, err = ParseMetric(s); err != nil {
			return nil, p.errf(v, "metric", "%v", err)
		}
	}
	noise := 0.0
	if v := top["remaining_noise"]; v != nil {
		if noise, err = p.nonneg(v, "remaining_noise"); err != nil {
			return nil, err
		}
		if noise >= 1 {
			return nil, p.errf(v, "remaining_noise", "must be below 1, got %v", noise)
		}
	}
	seed := uint64(1)
	if v := top["seed"]; v != nil {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&seed) != nil {
			return nil, p.errf(v, "seed", "want a non-negative integer, got %q", v.Value)
		}
	}
	f.Opt.Seed = seed
	if v := top["gpu_scores"]; v != nil {
		var sf [variability.NumClasses][]float64
		err := p.fields(v, "gpu_scores", []string{"A", "B", "C", "D"}, func(k string, l *yaml.Node) error {
			field := "gpu_scores." + k
			c, _ := variability.ParseClass(k)
			if l.Kind != yaml.SequenceNode || len(l.Content) != nGPU {
				return p.errf(l, field, "want a list of %d scores, one per GPU", nGPU)
			}
			for g, e := range l.Content {
				x, err := p.float(e, fmt.Sprintf("%s[%d]", field, g))
				if err != nil {
					return err
				}
				if x <= 0 {
					return p.errf(e, fmt.Sprintf("%s[%d]", field, g), "must be positive, got %v", x)
				}
				sf[c] = append(sf[c], x)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for c := range sf {
			if sf[c] == nil {
				sf[c] = make([]float64, nGPU)
				for g := range sf[c] {
					sf[c][g] = 1
				}
			}
		}
		if topo, err = topo.WithSpeeds(sf); err != nil {
			return nil, p.errf(v, "gpu_scores", "%v", err)
		}
	}
	f.Input.Topo = topo
	if f.Input.Offer, err = p.gpuList(top["offer"], "offer", nGPU); err != nil {
		return nil, err
	}
	apps, err := p.apps(top["apps"], nGPU, f.Input.Now)
	if err != nil {
		return nil, err
	}
	holder := map[int]string{}
	for _, g := range f.Input.Offer {
		holder[g] = "offer"
	}
	ctx := Context{Now: f.Input.Now, ClusterGPUs: nGPU, ActiveApps: len(apps)}
	for i, fa := range apps {
		for x, g := range fa.held {
			if h, ok := holder[g]; ok {
				where := "held by app " + h
				if h == "offer" {
					where = "offered"
				}
				return nil, p.errf(fa.fields["held"].Content[x], fmt.Sprintf("apps[%d].held[%d]", i, x), "GPU %d is also %s", g, where)
			}
			holder[g] = fa.name
		}
		a := SingleJob(fa.name, fa.arrival, fa.remaining, fa.total, fa.maxGPUs, Sensitivity{Machine: fa.spread, Rack: fa.rack}, fa.held)
		a.Class = fa.class
		a.NAvg = float64(len(apps))
		if fa.nAvg > 0 {
			a.NAvg = fa.nAvg
		}
		a.Noise = NoiseFactor(noise, seed, uint64(i))
		if fa.fields["iso_time_s"] != nil {
			a.IsoTime = fa.isoTime
		} else {
			a.IsoTime = (fa.total - fa.remaining) / IsoRate(a, ctx)
		}
		f.Input.Apps = append(f.Input.Apps, a)
	}
	return f, nil
}

func (p *parser) apps(v *yaml.Node, nGPU int, now float64) ([]*fileApp, error) {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return nil, p.errf(v, "apps", "want a non-empty list of apps")
	}
	known := []string{"name", "arrival_s", "remaining_gpu_s", "total_gpu_s", "max_gpus", "spread_factor", "rack_factor", "class", "n_avg", "iso_time_s", "held"}
	names := map[string]int{}
	var out []*fileApp
	for i, n := range v.Content {
		where := fmt.Sprintf("apps[%d]", i)
		fa := &fileApp{node: n, fields: map[string]*yaml.Node{}, spread: 1}
		if err := p.fields(n, where, known, func(k string, x *yaml.Node) error { fa.fields[k] = x; return nil }); err != nil {
			return nil, err
		}
		for _, req := range []string{"name", "remaining_gpu_s", "total_gpu_s", "max_gpus"} {
			if fa.fields[req] == nil {
				return nil, p.errf(n, where+"."+req, "required")
			}
		}
		var err error
		get := func(k string, fn func(*yaml.Node, string) error) {
			if x := fa.fields[k]; x != nil && err == nil {
				err = fn(x, where+"."+k)
			}
		}
		get("name", func(x *yaml.Node, f string) error {
			s, err := p.str(x, f)
			if err == nil && strings.TrimSpace(s) == "" {
				err = p.errf(x, f, "empty")
			}
			if j, dup := names[s]; err == nil && dup {
				err = p.errf(x, f, "app %q already defined as apps[%d]", s, j)
			}
			names[s] = i
			fa.name = s
			return err
		})
		get("arrival_s", func(x *yaml.Node, f string) error {
			fa.arrival, err = p.nonneg(x, f)
			if err == nil && fa.arrival > now {
				err = p.errf(x, f, "arrives at %v, after now_s %v", fa.arrival, now)
			}
			return err
		})
		get("remaining_gpu_s", func(x *yaml.Node, f string) (e error) { fa.remaining, e = p.nonneg(x, f); return })
		get("total_gpu_s", func(x *yaml.Node, f string) error {
			fa.total, err = p.float(x, f)
			if err == nil && fa.total <= 0 {
				err = p.errf(x, f, "must be positive, got %v", fa.total)
			}
			if err == nil && fa.total < fa.remaining {
				err = p.errf(x, f, "%v is less than remaining_gpu_s %v", fa.total, fa.remaining)
			}
			return err
		})
		get("max_gpus", func(x *yaml.Node, f string) error {
			fa.maxGPUs, err = p.int(x, f)
			if err == nil && (fa.maxGPUs < 1 || fa.maxGPUs > nGPU) {
				err = p.errf(x, f, "must be 1..%d (the cluster's GPUs), got %d", nGPU, fa.maxGPUs)
			}
			return err
		})
		get("spread_factor", func(x *yaml.Node, f string) error {
			fa.spread, err = p.float(x, f)
			if err == nil && !(fa.spread > 0 && fa.spread <= 1) {
				err = p.errf(x, f, "must be in (0, 1], got %v", fa.spread)
			}
			return err
		})
		get("rack_factor", func(x *yaml.Node, f string) error {
			fa.rack, err = p.float(x, f)
			if err == nil && !(fa.rack > 0 && fa.rack <= fa.spread) {
				err = p.errf(x, f, "must be in (0, spread_factor %v], got %v", fa.spread, fa.rack)
			}
			return err
		})
		get("class", func(x *yaml.Node, f string) error {
			s, err := p.str(x, f)
			if err == nil {
				if fa.class, err = variability.ParseClass(s); err != nil {
					err = p.errf(x, f, "%v", err)
				}
			}
			return err
		})
		get("n_avg", func(x *yaml.Node, f string) error {
			fa.nAvg, err = p.float(x, f)
			if err == nil && fa.nAvg < 1 {
				err = p.errf(x, f, "must be >= 1, got %v", fa.nAvg)
			}
			return err
		})
		get("iso_time_s", func(x *yaml.Node, f string) (e error) { fa.isoTime, e = p.nonneg(x, f); return })
		get("held", func(x *yaml.Node, f string) error {
			fa.held, err = p.gpuList(x, f, nGPU)
			if err == nil && len(fa.held) > fa.maxGPUs {
				err = p.errf(x, f, "holds %d GPUs, more than max_gpus %d", len(fa.held), fa.maxGPUs)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, fa)
	}
	return out, nil
}
