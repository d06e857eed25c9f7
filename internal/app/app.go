// Package app is routekeeper's application layer: from a configuration it
// builds what the commands run on — the cloud connection (Azure, or the
// embedded or a served local fabric), the node source, the controllers of
// the main table and the mirrors, the daemon — and it composes the read-only
// commands (doctor, the overlay pre-flight, diff, trace, iac check, ipplan
// --config) from one dry run's observation and verdict. It holds no rule of
// its own: what is routed and why is internal/verdict's, what a finding
// says is internal/doctor's, internal/overlay's or internal/iac's. The CLI
// (internal/cli) is flags, output and exit codes over it.
package app

import (
	"errors"
	"fmt"
	"log/slog"
)

// App is what every composition shares: the logger, the environment and
// how to show progress. The zero value is not usable: Log and Getenv are
// required.
type App struct {
	Log    *slog.Logger
	Getenv func(string) string
	// Progress, if set, shows that the command waits for what (a line
	// finished by the returned function); nil shows nothing.
	Progress func(what string) (done func(error))
}

// progress is a.Progress, or nothing.
func (a *App) progress(what string) func(error) {
	if a.Progress == nil {
		return func(error) {}
	}
	return a.Progress(what)
}

// ErrBadInput marks an error in what the user gave (the configuration, an
// inventory, a file, an argument): the CLI exits 2 on it.
var ErrBadInput = errors.New("bad input")

// BadInput marks err as bad input.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &badInput{err}
}

// BadInputf formats a bad-input error.
func BadInputf(format string, args ...any) error { return BadInput(fmt.Errorf(format, args...)) }

type badInput struct{ err error }

func (e *badInput) Error() string   { return e.err.Error() }
func (e *badInput) Unwrap() []error { return []error{e.err, ErrBadInput} }
