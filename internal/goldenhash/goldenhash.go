// Package goldenhash folds a run's decisions into one number, so that a
// golden test can pin thousands of answers with one constant recorded
// from the code before a change: any answer that moves changes the sum.
package goldenhash

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
)

// Hash is FNV-1a over integers written as 8 little-endian bytes each, so
// a sum does not depend on the platform's int size.
type Hash struct{ h hash.Hash64 }

// New starts an empty sum.
func New() *Hash { return &Hash{h: fnv.New64a()} }

// Int adds v to the sum.
func (h *Hash) Int(v int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(int64(v)))
	h.h.Write(b[:])
}

// Sum is the sum of everything added so far.
func (h *Hash) Sum() uint64 { return h.h.Sum64() }
