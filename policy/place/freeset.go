package place

import "github.com/palsched/pal/cluster"

// freeSet is a placer's scratch copy of which GPUs are free this round.
// GPU ids are contiguous per node, so a node's GPUs are a range and "the
// first n free GPUs of a node" is a scan of that range.
type freeSet struct {
	c        *cluster.Cluster
	free     []bool
	nodeFree []int
	total    int
	// gen changes whenever GPUs are freed (a reset or a give), so a placer
	// caching a list of free GPUs knows when taking alone no longer
	// explains the difference.
	gen int
}

func (f *freeSet) reset(c *cluster.Cluster) {
	f.gen++
	f.c = c
	n := c.Size()
	if cap(f.free) < n {
		f.free = make([]bool, n)
	}
	f.free = f.free[:n]
	if cap(f.nodeFree) < c.NumNodes() {
		f.nodeFree = make([]int, c.NumNodes())
	}
	f.nodeFree = f.nodeFree[:c.NumNodes()]
	for g := range f.free {
		f.free[g] = true
	}
	for i, nd := range c.Nodes {
		f.nodeFree[i] = len(nd.GPUs)
	}
	f.total = n
}

func (f *freeSet) take(gpus []int) {
	for _, g := range gpus {
		f.free[g] = false
		f.nodeFree[f.c.GPUs[g].Node]--
	}
	f.total -= len(gpus)
}

func (f *freeSet) give(gpus []int) {
	f.gen++
	for _, g := range gpus {
		f.free[g] = true
		f.nodeFree[f.c.GPUs[g].Node]++
	}
	f.total += len(gpus)
}

// firstFree appends up to n free GPUs of node, lowest ids first.
func (f *freeSet) firstFree(dst []int, node, n int) []int {
	for _, g := range f.c.Nodes[node].GPUs {
		if n == 0 {
			break
		}
		if f.free[g] {
			dst = append(dst, g)
			n--
		}
	}
	return dst
}

// list appends every free GPU in id order.
func (f *freeSet) list(dst []int) []int {
	for g, ok := range f.free {
		if ok {
			dst = append(dst, g)
		}
	}
	return dst
}
