package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command; do not land as done.
func (a *app) newIpplanCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "ipplan",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("ipplan: not built yet") },
	}
}
