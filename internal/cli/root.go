// Package cli implements routekeeper's commands: flags, output and exit codes.
// Each command has its own file; the work itself is done by the other internal
// packages, so that it can be tested without a process.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/output"
	"github.com/routekeeper/routekeeper/internal/yamlfile"
)

// envPrefix is the prefix of the environment variables that set flags:
// --route-table becomes ROUTEKEEPER_ROUTE_TABLE.
const envPrefix = "ROUTEKEEPER_"

// shell holds what every command shares: the streams, the environment and
// the global flags. One shell is made per Run, so tests can run commands in
// parallel.
type shell struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        []string    // NAME=value; nil when unknown (tests)
	tty            bool        // stderr is a terminal: show progress
	progressOpen   atomic.Bool // a progress line is open (progress.go)

	out       output.Options // -o and --query
	logLevel  string
	logFormat string
	log       *slog.Logger
	// app is the application layer the commands run (built in setup,
	// once the logger is).
	app *app.App
}

// Run runs routekeeper with args (without the program name) and returns the
// process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(ctx, args, stdin, stdout, stderr, os.Getenv, os.Environ())
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return runWith(ctx, args, stdin, stdout, stderr, getenv, nil)
}

// runWith is run with the whole environment as well, "NAME=value" strings,
// to warn about ROUTEKEEPER_* variables that no flag reads.
func runWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, environ []string) int {
	a := &shell{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, environ: environ, tty: isTerminal(stderr)}
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	code, msg := exitCode(err)
	if msg != "" {
		fmt.Fprintf(stderr, "routekeeper: %s\n", msg)
		if code == ExitUsage && strings.HasPrefix(msg, "unknown") {
			fmt.Fprintln(stderr, "Run 'routekeeper --help' for usage.")
		}
	}
	return code
}

func (a *shell) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "routekeeper",
		Short: "Keep Kubernetes pod routes in Azure route tables, and the tables on their subnets",
		Long: `routekeeper programs and guards the user-defined routes that carry pod traffic
between the nodes of a Kubernetes cluster on Azure (kubenet, Calico policy-only,
self-managed clusters): one route per node pod CIDR, in a route table that stays
associated with the node subnets. With no Azure subscription configured it runs
against an embedded local fabric that behaves like Azure Resource Manager.`,
		Version:       buildVersion().Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.bindEnv(cmd); err != nil {
				return err
			}
			if err := a.setup(); err != nil {
				return err
			}
			a.warnUnknownEnv(cmd.Root())
			return nil
		},
	}
	root.SetVersionTemplate("routekeeper {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(explainFlagError(err)) })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.out.Format, "output", "o", "table", "output format: table, json, yaml or tsv")
	pf.StringVar(&a.out.Query, "query", "", "JMESPath query applied to the JSON form of the result before -o renders it (see docs/cli.md)")
	pf.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&a.logFormat, "log-format", "text", "log format: text or json")

	root.AddCommand(
		a.newVersionCmd(),
		a.newFabricCmd(),
		a.newRunCmd(),
		a.newDiffCmd(),
		a.newRoutesCmd(),
		a.newIpplanCmd(),
		a.newMigrateCmd(),
		a.newDoctorCmd(),
		a.newTraceCmd(),
		a.newIacCmd(),
	)
	return root
}

// bindEnv sets every flag that was not given on the command line from its
// ROUTEKEEPER_* environment variable, so flags beat the environment and the
// environment beats the config file.
func (a *shell) bindEnv(cmd *cobra.Command) error {
	var errs []string
	visit := func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v := a.getenv(name)
		if v == "" {
			return
		}
		if err := f.Value.Set(v); err != nil {
			if f.Value.Type() == "bool" {
				errs = append(errs, fmt.Sprintf("environment variable %s=%s: use true or false", name, v))
			} else {
				errs = append(errs, fmt.Sprintf("environment variable %s=%q: %v", name, v, err))
			}
			return
		}
		f.Changed = true
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(errs) > 0 {
		return usageErrorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// setup validates the global flags and makes the logger.
func (a *shell) setup() error {
	if err := a.out.Compile(); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usageErrorf("flag --log-level: %q is not one of debug, info, warn, error", a.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usageErrorf("flag --log-format: %q is not one of text, json", a.logFormat)
	}
	a.app = &app.App{Log: a.log, Getenv: a.getenv, Progress: a.progress}
	return nil
}

// envName is the ROUTEKEEPER_* variable of a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// otherEnv are ROUTEKEEPER_* variables read without a flag of their own:
// the served fabric's endpoint, and the test tooling's (scripts/
// kube-testenv.sh, tofu-testenv.sh, test/), which a developer's shell may
// well export.
var otherEnv = []string{envPrefix + "ENDPOINT", envPrefix + "KUBE_APISERVER", envPrefix + "ETCD", envPrefix + "CACHE", envPrefix + "TOFU", envPrefix + "AZURERM"}

// otherEnvPrefixes are families of test variables (ROUTEKEEPER_E2E,
// ROUTEKEEPER_E2E_MEMORY_NODES, ROUTEKEEPER_FABRIC_TEST_*).
var otherEnvPrefixes = []string{envPrefix + "E2E", envPrefix + "FABRIC_TEST_"}

// warnUnknownEnv warns about each ROUTEKEEPER_* variable that no flag of
// any command reads (a misspelling is otherwise silently ignored), with the
// nearest known name.
func (a *shell) warnUnknownEnv(root *cobra.Command) {
	if a.environ == nil {
		return
	}
	known := map[string]bool{}
	for _, n := range otherEnv {
		known[n] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) { known[envName(f.Name)] = true }
		c.LocalFlags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	names := slices.Sorted(maps.Keys(known))
	for _, kv := range a.environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] ||
			slices.ContainsFunc(otherEnvPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		hint := yamlfile.Suggest(name, names)
		if !strings.HasPrefix(hint, " (did you mean") {
			hint = ""
		}
		a.log.Warn(fmt.Sprintf("environment variable %s is not one routekeeper reads; it is ignored%s", name, hint))
	}
}

// flagValueError is pflag's message for a boolean value it cannot parse.
var flagValueError = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: strconv\.ParseBool`)

// explainFlagError says what a boolean flag takes instead of strconv's
// message.
func explainFlagError(err error) error {
	if m := flagValueError.FindStringSubmatch(err.Error()); m != nil {
		flag := m[2]
		if i := strings.Index(flag, "--"); i >= 0 {
			flag = flag[i:]
		}
		return fmt.Errorf("flag %s=%s: use true or false", flag, m[1])
	}
	return err
}
