package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
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

// credentialTimeout is how long the first Azure token may take. On Azure
// the identity endpoint answers in milliseconds; off Azure a managed
// identity request is retried for minutes, so a short limit turns that into
// a clear error in seconds.
const credentialTimeout = 10 * time.Second

// firstToken gets an ARM token before any ARM call, showing progress on a
// terminal, so that a credential that cannot work fails within timeout with
// the credential source named, rather than as the error of the first read.
func (a *shell) firstToken(ctx context.Context, cred azcore.TokenCredential, source, scope string, timeout time.Duration) error {
	done := a.progress("getting an Azure token from " + source)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := cred.GetToken(tctx, policy.TokenRequestOptions{Scopes: []string{scope}})
	done(err)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || tctx.Err() != nil:
		return fmt.Errorf("azure credential: no token from %s within %s: not on Azure, or that identity is not available here (a managed identity needs an Azure VM or pod with it assigned; a service principal needs --client-id, --tenant and a secret; DefaultAzureCredential also tries 'az login')", source, timeout)
	default:
		return fmt.Errorf("azure credential: %s: %s", source, oneLine(err.Error()))
	}
}

// oneLine keeps the first paragraph of the Azure Identity library's
// multi-line messages (the rest is a troubleshooting link).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

// waitProgress is the cloud client's Wait hook: long-running operations
// show as progress on a terminal.
func (a *shell) waitProgress(what string) func(error) {
	if i := strings.Index(what, "/subscriptions/"); i >= 0 {
		what = what[:i] + shortID(what[i:])
	}
	return a.progress("waiting for " + what)
}
