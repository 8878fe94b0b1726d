package cliroot

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlags gives every command --cpuprofile and --memprofile, so a
// slow run on someone's own trace can be profiled as it was run, not
// reconstructed in a benchmark.
func addProfileFlags(root *cobra.Command) {
	var cpuPath, memPath string
	var cpuFile *os.File
	pf := root.PersistentFlags()
	pf.StringVar(&cpuPath, "cpuprofile", "", "write a CPU profile (go tool pprof) of the command to this file")
	pf.StringVar(&memPath, "memprofile", "", "write a heap profile (go tool pprof) to this file when the command ends")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuPath == "" {
			return nil
		}
		f, err := os.Create(cpuPath)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		cpuFile = f
		return nil
	}
	root.PersistentPostRunE = func(*cobra.Command, []string) error {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
		}
		if memPath == "" {
			return nil
		}
		f, err := os.Create(memPath)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		defer f.Close()
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		return nil
	}
}
