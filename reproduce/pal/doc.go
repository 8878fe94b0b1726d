// Package pal is the PAL paper's room of the reproduction: its simulated
// figures (§V-B, §V-C: Figs 11-18 and 20), the grids they read, the
// headline claims set beside the paper's and the artifact's, and PAL's
// summary (settings where paper and artifact differ, the packed-label
// swap, deviations and placement overhead).
//
// It builds on the shared convention of package paper (plan, Figure,
// display names and cells) and on sweep's grids; it imports no other
// room. Package reproduce runs its grids in the one sweep over every
// room, times Fig 18 alone afterwards, and writes what Figures returns.
package pal
