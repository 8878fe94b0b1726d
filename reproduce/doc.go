// Package reproduce regenerates the PAL paper's simulation figures (§V-B,
// §V-C: Figs 11-18 and 20) from the built-in data, and writes each
// figure's CSV, PNG and SVG, an HTML index and a summary that sets our
// headline numbers beside the paper's.
//
// Everything runs through one parallel sweep (package sweep), so the
// figures share prepared inputs and every core; only the placement-time
// benchmark of Fig 18 runs afterwards, alone, so its timings are not
// disturbed by simulations on the other cores.
//
// Each paper's experiments live in a room of their own below this
// package (hived, migration, stale), sharing one plan, figure and summary
// convention from package paper; this package holds PAL's figures and the
// run that writes every room's section into one report.
package reproduce
