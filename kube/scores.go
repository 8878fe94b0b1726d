package kube

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/variability"
)

// ScoresKey is the ConfigMap data key that holds per-GPU PM values.
const ScoresKey = "scores.csv"

// GPUKey names one device on a real cluster.
type GPUKey struct {
	Node  string
	Index int
}

// Compare orders keys by node name, then index: the order of every
// table the scheduler writes by GPU.
func (k GPUKey) Compare(o GPUKey) int {
	if c := strings.Compare(k.Node, o.Node); c != 0 {
		return c
	}
	return cmp.Compare(k.Index, o.Index)
}

// NodeScores are raw per-GPU, per-class PM values (time-like: 1 is the
// median GPU, 1.2 is 20% slower), as `pal-kube profile export --kubernetes`
// writes them into the variability ConfigMap.
type NodeScores map[GPUKey][variability.NumClasses]float64

// ReadNodeScores reads the ConfigMap's CSV: columns node, gpu_index,
// class, score; one row per device and class. A device must have all
// four classes. Errors name the file (the ConfigMap), line and field.
func ReadNodeScores(name string, r io.Reader) (NodeScores, error) {
	t, err := csvin.Open(name, r, csvin.Known("node", "gpu_index", "class", "score"), csvin.EmptyMsg("empty (want a header node,gpu_index,class,score)"))
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("node", "gpu_index", "class", "score")
	if err != nil {
		return nil, err
	}
	type seen struct {
		have [variability.NumClasses]bool
		line int
	}
	out := NodeScores{}
	got := map[GPUKey]*seen{}
	for t.Next() {
		node := strings.TrimSpace(t.Text(cols[0]))
		if node == "" {
			return nil, t.Errorf(cols[0], "empty node name")
		}
		idx, err := t.Int(cols[1])
		if err != nil {
			return nil, err
		}
		if idx < 0 || idx > 1023 {
			return nil, t.Errorf(cols[1], "%d is not a device index (0..1023)", idx)
		}
		c, err := variability.ParseClass(t.Text(cols[2]))
		if err != nil {
			return nil, t.Errorf(cols[2], "%v", err)
		}
		v, err := t.Positive(cols[3])
		if err != nil {
			return nil, err
		}
		k := GPUKey{node, idx}
		sn := got[k]
		if sn == nil {
			sn = &seen{line: t.FieldLine(cols[0])}
			got[k] = sn
		}
		if sn.have[c] {
			return nil, t.Errorf(cols[2], "%s/%d class %s given twice", node, idx, c)
		}
		sn.have[c] = true
		row := out[k]
		row[c] = v
		out[k] = row
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	for k, sn := range got {
		for c, ok := range sn.have {
			if !ok {
				return nil, &csvin.Error{File: name, Line: sn.line, Field: "class", Msg: fmt.Sprintf("%s/%d has no class %s row", k.Node, k.Index, variability.Class(c))}
			}
		}
	}
	return out, nil
}

// WriteNodeScores writes the ConfigMap's CSV, rows sorted by the order of
// keys given.
func WriteNodeScores(w io.Writer, keys []GPUKey, s NodeScores) error {
	if _, err := fmt.Fprintln(w, "node,gpu_index,class,score"); err != nil {
		return err
	}
	for _, k := range keys {
		v := s[k]
		for c := range variability.Class(variability.NumClasses) {
			if _, err := fmt.Fprintf(w, "%s,%d,%s,%s\n", k.Node, k.Index, c, fmtFloat(v[c])); err != nil {
				return err
			}
		}
	}
	return nil
}
