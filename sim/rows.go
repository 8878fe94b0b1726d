package sim

import "github.com/palsched/pal/workload"

// rows hands the loops the trace's rows in arrival order: from the
// trace's list, or, for a streamed trace (workload.StreamTraceFile), from
// its file, one row ahead of the clock, so that a run holds its active
// jobs rather than its whole trace.
type rows struct {
	specs []workload.Spec // a trace held whole
	next  int
	file  *workload.RowReader // a streamed trace
	head  workload.Spec       // its next row, when ahead
	ahead bool
	// err is a streamed trace's reading error; the loops stop on it.
	err error
}

// open starts reading tr's rows.
func (r *rows) open(tr *workload.Trace) error {
	if !tr.Streamed() {
		r.specs = tr.Jobs
		return nil
	}
	f, err := tr.Rows()
	r.file = f
	return err
}

// peek is the next row to arrive, nil when none is left (or reading it
// failed: see err). It stays valid until pop.
func (r *rows) peek() *workload.Spec {
	if r.file == nil {
		if r.next < len(r.specs) {
			return &r.specs[r.next]
		}
		return nil
	}
	if !r.ahead && r.err == nil {
		r.ahead, r.err = r.file.Next(&r.head)
		if !r.ahead {
			r.file.Close()
			r.file = nil // no rows after the last: peek answers nil from now on
		}
	}
	if r.ahead {
		return &r.head
	}
	return nil
}

// pop moves past the row peek returned.
func (r *rows) pop() {
	if r.ahead {
		r.ahead = false
		return
	}
	r.next++
}

// done reports whether every row has arrived.
func (r *rows) done() bool { return r.peek() == nil }

// close lets go of the file of a run that stopped before its last row.
func (r *rows) close() {
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
}
