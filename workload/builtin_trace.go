package workload

// A built-in trace's rows are parsed by every run that names it: for
// the artifact's pinned Sia-Philly traces (3,160 rows each) the CSV
// parse and the fresh pages its kept rows are written to were about a
// sixth of a whole `pal sim` process. traces_builtin.go holds those
// traces as their first reading left them (StreamTraceFS: every check
// made, every row kept), written by TestBuiltinTraces from the embedded
// CSV files, which stay the source and what every other reader parses.
// The compiled rows are static data: read in place, never parsed or
// copied.

// builtinTrace is one compiled trace: what StreamTraceFS's first reading
// notes, and its rows. lookups is, for each of names, what the model
// table said of it when the rows were written (iteration time, class):
// a row's Spec depends on the table only through those, so the rows
// stand for the CSV read with any table that says the same.
type builtinTrace struct {
	path               string // in its embedded file system
	name               string // Trace.Name (the base name)
	size               int64
	rows, tracked      int
	most               int // index of the first row with the largest gang
	latest             float64
	mostAll            int
	odd                bool
	hasTracked, hasApp bool
	source             string
	names              []string
	lookups            []builtinLookup
	kept               []keptRow
}

type builtinLookup struct {
	iter  float64
	class int
}

// BuiltinTrace is the compiled form of the embedded trace at p (its path
// in the data package's file system) when models says of each of its
// models what the table it was compiled with said, or nil: then the
// caller reads the CSV (StreamTraceFS). The Trace is StreamTraceFS's,
// row for row (TestBuiltinTraces).
func BuiltinTrace(p string, models *Models) *Trace {
	for i := range builtinTraces {
		b := &builtinTraces[i]
		if b.path != p {
			continue
		}
		for k, name := range b.names {
			it, c, ok := models.Lookup(name)
			if !ok || it != b.lookups[k].iter || int(c) != b.lookups[k].class {
				return nil
			}
		}
		tf := &traceFile{path: b.name, models: models, rows: b.rows, tracked: b.tracked,
			latest: b.latest, mostAll: b.mostAll, odd: b.odd, size: b.size,
			kept: b.kept, source: b.source, names: b.names, builtin: true}
		tf.most = tf.spec(&b.kept[b.most])
		return &Trace{Name: b.name, HasTracked: b.hasTracked, HasApp: b.hasApp, file: tf}
	}
	return nil
}
