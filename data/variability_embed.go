package data

import "embed"

// Variability holds the staged profiling CSVs (see PROVENANCE.md §1a) so
// that named profiles work from any directory and in a single binary.
//
//go:embed variability
var Variability embed.FS

// Classify holds the example application table of the classifier. It lives
// here rather than in its own file so that all of package variability's
// embedded inputs are declared in one place.
//
//go:embed classify
var Classify embed.FS
