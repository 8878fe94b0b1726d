// Package hived is the HiveD paper's room of the paper experiments: the
// sharing-anomaly experiment (quota against HiveD against private
// clusters, on a synthetic cluster and on the Philly trace with its real
// VCs), the binding and variable-GPU sections and the tenancy decision
// timing, written as `pal-reproduce hived` writes them. It shares no
// helper with the other rooms; `reproduce` runs it as one section of the
// whole reproduction.
package hived
