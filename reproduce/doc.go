// Package reproduce runs every room of the paper experiments and writes
// one report: each figure's CSV, PNG and SVG, an HTML index and a
// summary.md that joins the rooms' sections.
//
// PAL's and the migration study's grids run through one parallel sweep
// (package sweep), so the figures share prepared inputs and every core;
// only the placement-time benchmark of Fig 18 runs afterwards, alone, so
// its timings are not disturbed by simulations on the other cores. The
// HiveD, stale-profiles and Themis rooms run after it, each into its own
// subdirectory.
//
// Each paper's experiments live in a room of their own below this
// package (pal, hived, migration, stale, themis), sharing one plan,
// figure and summary convention from package paper; this package holds
// no paper's figures, only the run over the rooms and the report.
package reproduce
