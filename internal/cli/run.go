package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command; do not land as done.
func (a *app) newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("run: not built yet") },
	}
}
