package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newMovedCmd is a hidden command that has moved to another binary: it
// accepts any arguments and fails with the command to run instead, so
// that an old script fails loudly and says where the command went.
// `pal reproduce hived --quick` names `go run ./cmd/pal-reproduce hived
// --quick`.
func newMovedCmd(name, binary string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              "moved to " + binary,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			run := strings.Join(append([]string{"go run ./cmd/" + binary}, args...), " ")
			return fmt.Errorf("moved: %s (or go install ./cmd/%s)", run, binary)
		},
	}
}
