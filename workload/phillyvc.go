package workload

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/palsched/pal/data"
	"github.com/palsched/pal/internal/quote"
)

// PhillyVC is one of the large Philly virtual clusters with its node count
// (Helios' philly_vc.csv).
type PhillyVC struct {
	Name  string
	Nodes int
}

// ReadPhillyVCs reads `vc,node num` rows.
func ReadPhillyVCs(name string, r io.Reader) ([]PhillyVC, error) {
	t, cols, err := openCSV(name, r, []string{"vc", "node num"}, []string{"vc", "node num"}, "empty file (want a header vc,node num)")
	if err != nil {
		return nil, err
	}
	var out []PhillyVC
	seen := map[string]int{}
	for t.Next() {
		if t.Width() == 1 && t.Text(0) == "" {
			continue
		}
		vc, err := t.Field(cols[0])
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[vc]; dup {
			return nil, t.Errorf(cols[0], "VC %s already listed on line %d", quote.Value(vc), prev)
		}
		seen[vc] = t.Line()
		n, err := t.Int(cols[1])
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, t.Errorf(cols[1], "%d is not a positive node count", n)
		}
		out = append(out, PhillyVC{vc, n})
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no VCs after the header", name)
	}
	return out, nil
}

// PhillyVCTrace is the Philly job trace with its real VCs.
type PhillyVCTrace struct {
	Trace *Trace
	VCs   []PhillyVC
	// Dropped counts rows left out and why; the caller prints it.
	Dropped map[string]int
	Start   time.Time // the first submission, time 0 of the trace
}

// PhillyPod is the pod size of a Philly job of n GPUs on 8-GPU nodes: the
// whole job when it fits a node, else the largest divisor of n up to 8
// (16 GPUs = 2 pods of 8, 12 GPUs = 2 pods of 6).
func PhillyPod(n, node int) int {
	if n <= node {
		return n
	}
	for p := node; p > 1; p-- {
		if n%p == 0 {
			return p
		}
	}
	return 1
}

// ReadPhillyVCTrace turns Pollux's processed Philly trace into a trace with
// VCs: submit times in seconds after the first submission, durations in
// seconds on a median GPU (duration_s), pods that fit nodes of
// gpusPerNode GPUs. Rows of VCs not in vcs, and jobs larger than their VC,
// are left out and counted in Dropped.
func ReadPhillyVCTrace(name string, r io.Reader, vcs []PhillyVC, gpusPerNode int) (*PhillyVCTrace, error) {
	t, cols, err := openCSV(name, r, []string{"timestamp", "duration", "num_gpus", "cluster"}, phillyKnown, "empty file (want a header timestamp,duration,num_gpus,cluster)")
	if err != nil {
		return nil, err
	}
	size := map[string]int{}
	for _, v := range vcs {
		size[v.Name] = v.Nodes * gpusPerNode
	}
	type row struct {
		at   time.Time
		s    Spec
		line int
	}
	var rows []row
	out := &PhillyVCTrace{VCs: vcs, Dropped: map[string]int{}}
	for t.Next() {
		if t.Width() == 1 && t.Text(0) == "" {
			continue
		}
		v, err := t.Field(cols[0])
		if err != nil {
			return nil, err
		}
		at, err := time.Parse("2006-01-02 15:04:05", v)
		if err != nil {
			return nil, t.Errorf(cols[0], "%s is not a YYYY-MM-DD HH:MM:SS time", quote.Value(v))
		}
		dur, err := t.Positive(cols[1])
		if err != nil {
			return nil, err
		}
		gpus, err := t.Int(cols[2])
		if err != nil {
			return nil, err
		}
		if gpus <= 0 {
			return nil, t.Errorf(cols[2], "%d is not a positive GPU count", gpus)
		}
		vc, err := t.Field(cols[3])
		if err != nil {
			return nil, err
		}
		switch max, ok := size[vc]; {
		case !ok:
			out.Dropped["VC not among the large VCs"]++
			continue
		case gpus > max:
			out.Dropped["larger than its VC"]++
			continue
		}
		rows = append(rows, row{at, Spec{GPUs: gpus, Iterations: dur, IterTime: 1, Model: NoModel, Tracked: true,
			VC: vc, PodGPUs: PhillyPod(gpus, gpusPerNode), Source: name, Line: t.Line()}, t.Line()})
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no jobs of the given VCs", name)
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].at.Before(rows[b].at) })
	out.Start = rows[0].at
	tr := &Trace{Name: name}
	for i, r := range rows {
		r.s.ID = i
		r.s.Submit = r.at.Sub(out.Start).Seconds()
		tr.Jobs = append(tr.Jobs, r.s)
	}
	out.Trace = tr
	return out, nil
}

// EmbeddedPhillyVCTrace is ReadPhillyVCTrace on the embedded files.
func EmbeddedPhillyVCTrace(gpusPerNode int) (*PhillyVCTrace, error) {
	vf, err := data.Philly.Open("philly/philly_vc.csv")
	if err != nil {
		return nil, err
	}
	defer vf.Close()
	vcs, err := ReadPhillyVCs("philly/philly_vc.csv (embedded)", vf)
	if err != nil {
		return nil, err
	}
	f, err := data.Philly.Open("philly/philly.csv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPhillyVCTrace(EmbeddedPhillyName, f, vcs, gpusPerNode)
}

// WriteTenancyTrace writes jobs with the tenancy columns
// (job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,priority); durations
// are run seconds on a median GPU (Iterations x IterTime).
func WriteTenancyTrace(w io.Writer, jobs []Spec) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"job_id", "num_gpus", "pod_gpus", "submit_time", "duration_s", "vc", "priority"}); err != nil {
		return err
	}
	for i := range jobs {
		j := &jobs[i]
		pod := ""
		if j.PodGPUs > 0 {
			pod = strconv.Itoa(j.PodGPUs)
		}
		if err := cw.Write([]string{strconv.Itoa(j.ID), strconv.Itoa(j.GPUs), pod, strconv.FormatFloat(j.Submit, 'f', -1, 64),
			strconv.FormatFloat(j.Iterations*j.IterTime, 'f', -1, 64), j.VC, strconv.Itoa(j.VCPriority)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
