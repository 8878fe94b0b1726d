// Package cluster describes the GPUs a scheduler can hand out: nodes, the
// GPUs inside them, and which job holds which GPU.
//
// GPU ids are global and contiguous per node (node n owns GPUs
// n*G .. n*G+G-1 on a uniform cluster), which is the numbering the PAL
// artifact registers its simulated nodes with. Locality is expressed as a
// list of levels (node today; rack or switch can be added as further
// levels) so that placement code asks "do these GPUs share level l?"
// rather than hard-coding node boundaries.
package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// Free marks an unallocated GPU in the owner table.
const Free = -1

// GPU is one accelerator.
type GPU struct {
	ID    int    // global id, 0..N-1
	Node  int    // node index
	Local int    // index inside the node
	UUID  string // optional physical identity (real clusters, profiles by UUID)
}

// Node is one machine.
type Node struct {
	ID   int
	Name string
	GPUs []int // global GPU ids, ascending
}

// Cluster is the static shape of a cluster plus the current owner of every
// GPU. Policies receive it read-only (see View); only drivers call Assign
// and Release.
type Cluster struct {
	Nodes []Node
	GPUs  []GPU
	owner []int
	// node[g] is GPUs[g].Node, packed: Assign, Release and SpansNodes run
	// for every job that moves, and a GPU record is five words.
	node  []int32
	nfree int // free GPUs; a node's are counted when asked (FreeOnNode)
}

// New builds a uniform cluster of nodes x gpusPerNode.
func New(nodes, gpusPerNode int) (*Cluster, error) {
	if nodes <= 0 || gpusPerNode <= 0 {
		return nil, fmt.Errorf("cluster: need at least one node and one GPU per node, got %dx%d", nodes, gpusPerNode)
	}
	sizes := make([]int, nodes)
	for i := range sizes {
		sizes[i] = gpusPerNode
	}
	return NewSized(sizes)
}

// NewSized builds a cluster whose node i has sizes[i] GPUs.
//
// It allocates a handful of blocks whatever the size: the GPU records,
// the nodes, one run of ids that every node's GPU list is a window of,
// and one string that every node's name is a slice of. Growing them node
// by node (and formatting each name) cost 5 s and 1.4 GB of garbage for
// the largest shape Parse accepts, long enough for the fuzzer to take a
// worker for hung.
func NewSized(sizes []int) (*Cluster, error) {
	if len(sizes) == 0 {
		return nil, fmt.Errorf("cluster: no nodes")
	}
	total := 0
	for n, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("cluster: node %d has %d GPUs", n, s)
		}
		total += s
	}
	c := &Cluster{
		Nodes: make([]Node, len(sizes)),
		GPUs:  make([]GPU, total),
		owner: make([]int, total),
		node:  make([]int32, total),
		nfree: total,
	}
	ids := make([]int, total)
	var names []byte
	ends := make([]int, len(sizes))
	for n := range sizes {
		names = strconv.AppendInt(append(names, "node-"...), int64(n), 10)
		ends[n] = len(names)
	}
	all := string(names)
	id, start := 0, 0
	for n, s := range sizes {
		for l := range s {
			c.GPUs[id] = GPU{ID: id, Node: n, Local: l}
			c.node[id] = int32(n)
			c.owner[id] = Free
			ids[id] = id
			id++
		}
		// The window's capacity ends with it, so that an append to one
		// node's list copies rather than writes over the next node's.
		c.Nodes[n] = Node{ID: n, Name: all[start:ends[n]], GPUs: ids[id-s : id : id]}
		start = ends[n]
	}
	return c, nil
}

// Parse reads a shape such as "16x4" (16 nodes of 4 GPUs).
func Parse(spec string) (*Cluster, error) {
	n, g, err := ParseShape(spec)
	if err != nil {
		return nil, err
	}
	return New(n, g)
}

// ParseShape reads "NODESxGPUS" (x, X or ×) without building the cluster,
// for callers that only need the numbers (benchmarks, profile draws).
func ParseShape(spec string) (nodes, gpusPerNode int, err error) {
	s := strings.NewReplacer("×", "x", "X", "x").Replace(strings.TrimSpace(spec))
	a, b, ok := strings.Cut(s, "x")
	if !ok {
		return 0, 0, fmt.Errorf("--cluster %s: want NODESxGPUS, e.g. 16x4", quote.Value(spec))
	}
	n, err1 := strconv.Atoi(strings.TrimSpace(a))
	g, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("--cluster %s: node and GPU counts must be integers, e.g. 16x4", quote.Value(spec))
	}
	if n <= 0 || g <= 0 {
		return 0, 0, fmt.Errorf("--cluster %s: node and GPU counts must be positive", quote.Value(spec))
	}
	if n > MaxNodes || g > MaxGPUsPerNode || n*g > MaxGPUs {
		return 0, 0, fmt.Errorf("--cluster %s: too large (at most %d nodes, %d GPUs per node, %d GPUs in all)", quote.Value(spec), MaxNodes, MaxGPUsPerNode, MaxGPUs)
	}
	return n, g, nil
}

// Size limits: far beyond any real cluster, small enough that a typo
// cannot ask for terabytes of scratch space.
const (
	MaxNodes       = 1 << 20
	MaxGPUsPerNode = 1024
	MaxGPUs        = 1 << 22
)

// Clone returns an independent copy (shape and owners).
func (c *Cluster) Clone() *Cluster {
	d := &Cluster{Nodes: c.Nodes, GPUs: c.GPUs, node: c.node, nfree: c.nfree}
	d.owner = append([]int(nil), c.owner...)
	return d
}

// Size is the number of GPUs.
func (c *Cluster) Size() int { return len(c.GPUs) }

// NumNodes is the number of nodes.
func (c *Cluster) NumNodes() int { return len(c.Nodes) }

// MaxGPUsPerNode is the size of the largest node; PAL treats demands up to
// this size as "can fit inside one node".
func (c *Cluster) MaxGPUsPerNode() int {
	m := 0
	for _, n := range c.Nodes {
		if len(n.GPUs) > m {
			m = len(n.GPUs)
		}
	}
	return m
}

// String renders the shape, "16x4" for uniform clusters.
func (c *Cluster) String() string {
	g := len(c.Nodes[0].GPUs)
	for _, n := range c.Nodes {
		if len(n.GPUs) != g {
			return fmt.Sprintf("%d nodes/%d GPUs", len(c.Nodes), len(c.GPUs))
		}
	}
	return fmt.Sprintf("%dx%d", len(c.Nodes), g)
}

// NodeOf returns the node of a GPU.
func (c *Cluster) NodeOf(gpu int) int {
	if gpu < len(c.node) {
		return int(c.node[gpu]) // packed: one word per GPU
	}
	return c.GPUs[gpu].Node
}

// Owner returns the job holding gpu, or Free.
func (c *Cluster) Owner(gpu int) int { return c.owner[gpu] }

// IsFree reports whether gpu is unallocated.
func (c *Cluster) IsFree(gpu int) bool { return c.owner[gpu] == Free }

// FreeCount is the number of unallocated GPUs.
func (c *Cluster) FreeCount() int { return c.nfree }

// FreeOnNode is the number of unallocated GPUs on node n, counted on
// its GPUs: no driver keeps a count per node up to date for it (the
// simulator's rounds and the Kubernetes driver read only FreeCount).
func (c *Cluster) FreeOnNode(n int) int {
	free := 0
	for _, g := range c.Nodes[n].GPUs {
		if c.owner[g] == Free {
			free++
		}
	}
	return free
}

// SpansNodes reports whether the GPUs are on more than one node.
func (c *Cluster) SpansNodes(gpus []int) bool {
	if len(gpus) < 2 {
		return false
	}
	for _, g := range gpus[1:] {
		if c.node[g] != c.node[gpus[0]] {
			return true
		}
	}
	return false
}

// Assign gives gpus to job. It fails, changing nothing, if any GPU is
// already held: a GPU is never given twice.
func (c *Cluster) Assign(job int, gpus []int) error {
	if job < 0 {
		return fmt.Errorf("cluster: invalid job id %d", job)
	}
	for i, g := range gpus {
		if g < 0 || g >= len(c.owner) {
			return fmt.Errorf("cluster: job %d: GPU %d does not exist", job, g)
		}
		if c.owner[g] != Free {
			return fmt.Errorf("cluster: job %d: GPU %d already held by job %d", job, g, c.owner[g])
		}
		for _, h := range gpus[:i] {
			if h == g {
				return fmt.Errorf("cluster: job %d: GPU %d listed twice", job, g)
			}
		}
	}
	for _, g := range gpus {
		c.owner[g] = job
	}
	c.nfree -= len(gpus)
	return nil
}

// TryAssign is Assign when it would succeed, reporting whether it did;
// otherwise it changes nothing and, unlike Assign, builds no error (a
// caller that expects some GPUs still held tries again later).
func (c *Cluster) TryAssign(job int, gpus []int) bool {
	if job < 0 {
		return false
	}
	for i, g := range gpus {
		if g < 0 || g >= len(c.owner) || c.owner[g] != Free || slices.Contains(gpus[:i], g) {
			return false
		}
	}
	for _, g := range gpus {
		c.owner[g] = job
	}
	c.nfree -= len(gpus)
	return true
}

// Release frees gpus held by job.
func (c *Cluster) Release(job int, gpus []int) error {
	for _, g := range gpus {
		if g < 0 || g >= len(c.owner) || c.owner[g] != job {
			return fmt.Errorf("cluster: job %d does not hold GPU %d", job, g)
		}
	}
	for _, g := range gpus {
		c.owner[g] = Free
	}
	c.nfree += len(gpus)
	return nil
}

// Owners copies the owner table into dst (grown to Size) and returns it:
// Free or the job holding each GPU.
func (c *Cluster) Owners(dst []int) []int {
	return append(dst[:0], c.owner...)
}

// Install replaces the whole owner table with owner (one entry per GPU,
// Free or a job id >= 0, as a driver that rebuilt a round's allocation in
// one pass has it) and returns the table it replaced, for the caller to
// reuse as its next scratch table. It counts the free GPUs in one pass.
func (c *Cluster) Install(owner []int) (old []int, err error) {
	free := 0
	for _, o := range owner {
		if o == Free {
			free++
		}
	}
	return c.Adopt(owner, free)
}

// Adopt is Install for a caller that knows how many entries of owner
// are Free, as one that built it by claiming GPUs in an all-free table,
// each checked free first, does (round.Applier): free is taken as the
// count, not checked, so the table is not read. It is refused, changing
// nothing, when owner is not one entry per GPU or free is out of range.
func (c *Cluster) Adopt(owner []int, free int) (old []int, err error) {
	if len(owner) != len(c.owner) {
		return nil, fmt.Errorf("cluster: owner table of %d GPUs for a cluster of %d", len(owner), len(c.owner))
	}
	if free < 0 || free > len(owner) {
		return nil, fmt.Errorf("cluster: %d free GPUs in a table of %d", free, len(owner))
	}
	c.nfree = free
	old, c.owner = c.owner, owner
	return old, nil
}

// FreeGPUs appends the free GPU ids in ascending order to dst.
func (c *Cluster) FreeGPUs(dst []int) []int {
	for g, o := range c.owner {
		if o == Free {
			dst = append(dst, g)
		}
	}
	return dst
}
