package place

import "slices"

// answerSet hands out one shared, read-only list per distinct GPU set an
// index answers with, so that a round's answers allocate only for sets
// never given before. Answers are read-only for everyone (see
// policy.Placer; windows of the id list are shared the same way), and two
// jobs never hold one set at once, so sharing a list is invisible: the
// driver compares lists by pointer only to find a job keeping its own.
//
// An LAS round on a small cluster moves most of its jobs, and PM-First
// gives a multi-GPU job the same few scattered sets again and again: on
// the 20,000-job Synergy trace on 16x4, 386,817 copies (26.5 MB, a
// tenth of the run's time in allocation, collection and page faults) for
// 3,190 distinct sets. On a large cluster sets rarely repeat, so the
// index uses it only up to internGPUs GPUs, and it stops adding once it
// holds internMax sets (later new sets are copied as before).
type answerSet struct {
	lists [][]int // the sets, each cut to its length
	slots []int32 // open addressing: index+1 into lists, 0 empty
}

const (
	internGPUs = 128
	internMax  = 1 << 14
)

func hashIDs(g []int) uint64 {
	h := uint64(len(g))
	for _, id := range g {
		h = (h ^ uint64(id)) * 0x100000001b3
		h ^= h >> 29
	}
	return h
}

// get returns the shared list equal to g, adding a copy of g when it is
// new; nil when g is new and the set is full.
func (s *answerSet) get(g []int) []int {
	l, _ := s.find(g)
	return l
}

// find is get, with the list's index in lists plus one (0 with nil).
func (s *answerSet) find(g []int) ([]int, uint32) {
	if len(s.slots) == 0 {
		s.slots = make([]int32, 256)
	}
	mask := uint64(len(s.slots) - 1)
	i := hashIDs(g) & mask
	for {
		k := s.slots[i]
		if k == 0 {
			break
		}
		if l := s.lists[k-1]; slices.Equal(l, g) {
			return l, uint32(k)
		}
		i = (i + 1) & mask
	}
	if len(s.lists) >= internMax {
		return nil, 0
	}
	l := make([]int, len(g))
	copy(l, g)
	s.lists = append(s.lists, l)
	s.slots[i] = int32(len(s.lists))
	if 2*len(s.lists) > len(s.slots) {
		s.grow()
	}
	return l, uint32(len(s.lists))
}

// grow doubles the table and files every list again.
func (s *answerSet) grow() {
	s.slots = make([]int32, 2*len(s.slots))
	mask := uint64(len(s.slots) - 1)
	for k, l := range s.lists {
		i := hashIDs(l) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = int32(k + 1)
	}
}
