package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/azcompat"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

// azCloudName is the name `fabric az` registers the fabric under in az.
const azCloudName = "RoutekeeperFabric"

// fabricAzOptions are the flags of `fabric az`.
type fabricAzOptions struct {
	endpoint  string
	ca        string
	configDir string
	apply     bool
}

func (a *shell) newFabricAzCmd() *cobra.Command {
	var o fabricAzOptions
	cmd := &cobra.Command{
		Use:   "az",
		Short: "Print (or run, with --apply) the az steps that point the Azure CLI at a served fabric",
		Long: `az prints the steps that make the Azure CLI work against a fabric served with
--tls, in a private AZURE_CONFIG_DIR (your own az configuration is not touched):
trust the fabric's CA, keep az offline, register the fabric as a cloud and log
in as the fabric's administrator, the service principal routekeeper-fabric (the
fabric accepts any client and secret; this one holds Owner once the fabric
enforces role assignments). With --apply it runs the
az steps itself and prints only the export lines, so that

  routekeeper fabric serve --tls &
  eval "$(routekeeper fabric az --apply)"

gives a shell whose az talks to the fabric. --apply also writes a
sitecustomize.py (az-python/ in the fabric's state directory) and exports
the PYTHONPATH that loads it: it works around the two packaging bugs of
Debian's and Ubuntu's azure-cli 2.45 that break az network and az role
(azure-cli issues 24745, 26830, 21349), and changes nothing for an az that
has neither. See docs/fabric.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.fabricAz(cmd.Context(), &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.endpoint, "endpoint", "https://"+defaultFabricListen, "base URL of the fabric (fabric serve --tls)")
	f.StringVar(&o.ca, "ca", "", "CA file that signed the fabric's certificate (default: the fabric's, in its state directory)")
	f.StringVar(&o.configDir, "config-dir", "", "AZURE_CONFIG_DIR to use (default: az/ in the fabric's state directory)")
	f.BoolVar(&o.apply, "apply", false, "run the az steps now and print only the export lines (for eval)")
	return cmd
}

// azSteps are the environment and the az commands of `fabric az`.
type azSteps struct {
	env      [][2]string
	commands [][]string
	// python is the directory --apply writes azcompat's sitecustomize.py
	// to, and puts first on PYTHONPATH.
	python string
}

func (a *shell) azSteps(o *fabricAzOptions) (azSteps, error) {
	u, err := url.Parse(o.endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return azSteps{}, usageErrorf("flag --endpoint: %q is not an https:// URL: az sends tokens over https only (serve the fabric with --tls)", o.endpoint)
	}
	base := strings.TrimRight(o.endpoint, "/")
	stateDir := filepath.Dir(fabric.StatePath(a.getenv))
	ca := o.ca
	if ca == "" {
		ca = a.app.FabricCA()
	}
	dir := o.configDir
	if dir == "" {
		dir = filepath.Join(stateDir, "az")
	}
	var s azSteps
	s.python = filepath.Join(stateDir, "az-python")
	s.env = [][2]string{
		{"AZURE_CONFIG_DIR", dir},
		{"REQUESTS_CA_BUNDLE", ca},
		// Offline: no telemetry upload, no survey prompt.
		{"AZURE_CORE_COLLECT_TELEMETRY", "no"},
		{"AZURE_CORE_SURVEY_MESSAGE", "no"},
		{"AZURE_CORE_NO_COLOR", "yes"},
	}
	s.commands = [][]string{
		{"az", "cloud", "register", "-n", azCloudName,
			"--endpoint-resource-manager", base + "/",
			"--endpoint-active-directory", base + identity.ADFSPath,
			"--endpoint-active-directory-resource-id", "https://management.core.windows.net/",
			"--endpoint-active-directory-graph-resource-id", "https://graph.windows.net/",
			"--endpoint-management", "https://management.core.windows.net/"},
		{"az", "cloud", "set", "-n", azCloudName},
		{"az", "login", "--service-principal", "-u", fabric.AdminClientID, "-p", "fabric", "--tenant", fabric.DefaultTenant, "-o", "none"},
		{"az", "account", "set", "-s", fabric.DefaultSubscription},
	}
	return s, nil
}

func (a *shell) fabricAz(ctx context.Context, o *fabricAzOptions) error {
	s, err := a.azSteps(o)
	if err != nil {
		return err
	}
	exports := func(w io.Writer) {
		for _, e := range s.env {
			fmt.Fprintf(w, "export %s=%s\n", e[0], shellQuote(e[1]))
		}
	}
	if !o.apply {
		w := a.stdout
		fmt.Fprintf(w, "# az against the routekeeper fabric at %s, in a private configuration directory\n", o.endpoint)
		exports(w)
		fmt.Fprintf(w, "# Debian's or Ubuntu's azure-cli 2.45 (apt-get install azure-cli): --apply also writes %s/sitecustomize.py\n", s.python)
		fmt.Fprintf(w, "# and exports PYTHONPATH=%s, without which az network and az role fail there (docs/fabric.md)\n", s.python)
		for _, c := range s.commands {
			fmt.Fprintln(w, shellJoin(c))
		}
		return nil
	}
	if _, err := exec.LookPath("az"); err != nil {
		return fmt.Errorf("az is not installed (Debian: apt-get install azure-cli): %w", err)
	}
	if _, err := os.Stat(s.env[1][1]); err != nil {
		return fmt.Errorf("the fabric's CA %s: %w (serve the fabric with --tls first, or give --ca)", s.env[1][1], err)
	}
	pythonPath, err := azcompat.Install(s.python, a.getenv("PYTHONPATH"))
	if err != nil {
		return err
	}
	s.env = append(s.env, [2]string{"PYTHONPATH", pythonPath})
	env := os.Environ()
	for _, e := range s.env {
		env = append(env, e[0]+"="+e[1])
	}
	// A cloud registered by an earlier run may point at another port; az
	// unregisters only a cloud that is not the current one.
	for _, c := range [][]string{{"az", "cloud", "set", "-n", "AzureCloud"}, {"az", "cloud", "unregister", "-n", azCloudName}} {
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Env = env
		_ = cmd.Run()
	}
	for _, c := range s.commands {
		fmt.Fprintf(a.stderr, "+ %s\n", shellJoin(c))
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = a.stderr, a.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", shellJoin(c), err)
		}
	}
	exports(a.stdout)
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
