// Command routekeeper keeps Kubernetes pod routes in Azure route tables and the
// route tables attached to their subnets. main only wires the process to
// internal/cli (the commands: flags, output, exit codes); what a command
// reads is internal/observe's, whether a node is routed and what to write is
// internal/verdict's, and the loops that act on it are internal/controller's
// (docs/design.md, "Layout").
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/routekeeper/routekeeper/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
