package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of routekeeper",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			version := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				version = bi.Main.Version
			}
			_, err := fmt.Fprintf(a.stdout, "routekeeper %s\n", version)
			return err
		},
	}
}
