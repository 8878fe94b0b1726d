// Command pal-kube is PAL's cluster command line: the Kubernetes
// scheduler (`pal-kube scheduler`), a local dev cluster, trace replay
// against a cluster, and the profile commands that measure, scrape or
// export for one (profile bench, collect, export, dcgm).
//
// It is apart from pal, the research binary, because these commands need
// the Kubernetes client and the Prometheus client, whose build takes
// minutes and whose package initialisation alone costs more than a whole
// simulation; pal stays without them. A new command that talks to a
// cluster, reads a cluster's objects or needs the client's types belongs
// here; one that only computes (a simulation, a table, a manifest as
// plain text) belongs in pal. The flags both share (--version,
// --cpuprofile, --memprofile, --allow-extra-columns) come from
// internal/cliroot.
package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/internal/cliroot"
)

func main() { cliroot.Main(newRootCmd()) }

func newRootCmd() *cobra.Command {
	root := cliroot.New("pal-kube", "PAL on a Kubernetes cluster: the scheduler, a dev cluster, replay, GPU profiling",
		`PAL on a Kubernetes cluster: the scheduler, a dev cluster, trace replay and
GPU profiling on the cluster's nodes.

Build the binary in the checkout with go build -buildvcs=true -o pal-kube
./cmd/pal-kube (or go install ./cmd/pal-kube). The simulator and the
experiments are in pal (go install ./cmd/pal).`, version)
	profile := &cobra.Command{
		Use:   "profile",
		Short: "Measure GPUs on the cluster's nodes, scrape DCGM, and export PM-scores for the scheduler",
	}
	profile.AddCommand(newProfileBenchCmd(), newProfileCollectCmd(), newProfileExportCmd(), newProfileDCGMCmd())
	root.AddCommand(newSchedulerCmd(), newForecastCmd(), newDevClusterCmd(), newReplayCmd(), profile)
	return root
}

// version is set at release builds (-ldflags "-X main.version=v1.2.3").
var version = "devel"

// DefaultOutput is the --output every results command starts with (as in
// pal).
const DefaultOutput = "table"

// splitList splits a comma list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
