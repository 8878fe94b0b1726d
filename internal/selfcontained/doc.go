// Package selfcontained holds the test that keeps the checkout
// self-contained: no document, help text, comment or string may send a
// reader to a file outside it (the notes its authors worked from), to an
// issue tracker entry, or to a commit by id. A reader of a fresh clone has
// none of those, and a commit id in prose goes stale the day the history
// is rewritten. The package has no code; see selfcontained_test.go.
package selfcontained
