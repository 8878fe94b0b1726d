// Package intruns writes ascending integers compactly, each run of
// consecutive values as its ends ("0-3,8-9,12"), for the listings people
// read: a VC's devices, the seeds a table pools.
package intruns

import (
	"fmt"
	"strings"
)

// Format writes xs, which must be strictly ascending, as runs joined by sep: a
// run of two or more consecutive values as "a-b", a lone value as itself.
func Format[T ~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64](xs []T, sep string) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		} else {
			parts = append(parts, fmt.Sprint(xs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, sep)
}
