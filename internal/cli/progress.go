package cli

import (
	"fmt"
	"io"
	"os"
	"time"
)

// isTerminal reports whether w is a terminal (a character device): only
// then do commands show progress.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress shows on a terminal that the command waits for what: a line
// "routekeeper: <what>..." finished by "done (1.2s)" or "failed" when the
// returned function is called. Off a terminal (a pipe, a log collector,
// tests) it shows nothing: the log has the outcome.
func (a *shell) progress(what string) (done func(error)) {
	if !a.tty || !a.progressOpen.CompareAndSwap(false, true) {
		// A wait inside a step already shown (an operation of a migrate
		// step) adds nothing to its line.
		return func(error) {}
	}
	start := time.Now()
	fmt.Fprintf(a.stderr, "routekeeper: %s... ", what)
	return func(err error) {
		defer a.progressOpen.Store(false)
		if err != nil {
			fmt.Fprintln(a.stderr, "failed")
			return
		}
		fmt.Fprintf(a.stderr, "done (%s)\n", time.Since(start).Round(100*time.Millisecond))
	}
}
