package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/output"
)

// Exit codes shared by every command (see DESIGN.md, "CLI conventions").
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2 // usage errors and bad input (config, inventory, flags)
	ExitFindings = 3 // doctor findings, diff with changes, ipplan with errors
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error // nil for a silent exit (the command already printed its result)
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as bad input, as the application layer does: the
// command exits 2.
func usageError(err error) error { return app.BadInput(err) }

// usageErrorf formats a bad-input error: the command exits 2.
func usageErrorf(format string, args ...any) error { return app.BadInputf(format, args...) }

// findings makes the command exit 3 without printing an error: the findings
// (or changes) were already printed as the command's result.
func findings() error { return &exitError{code: ExitFindings} }

// exitCode maps an error returned by a command to the process exit code and
// prints it when there is something to say.
func exitCode(err error) (int, string) {
	if err == nil {
		return ExitOK, ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return ee.code, ""
		}
		return ee.code, ee.err.Error()
	}
	if errors.Is(err, output.ErrUsage) || errors.Is(err, app.ErrBadInput) {
		return ExitUsage, err.Error()
	}
	// cobra's own errors (unknown command, bad arguments) are usage errors.
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "arg(s)") {
		return ExitUsage, msg
	}
	return ExitError, msg
}
