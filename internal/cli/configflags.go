package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/config"
)

// configFlags are the flags of every command that works from routekeeper's
// configuration (run, diff, routes, migrate, doctor...): --config and one
// flag per setting of config.Settings, each also settable by its
// ROUTEKEEPER_* variable (root.go's bindEnv). Precedence: flag > variable >
// config file > azure.json > default. A command embeds configFlags, calls
// register on its flag set and load in RunE.
type configFlags struct {
	file string
	// getenv, when set, lets messages say whether a value came from a flag
	// or its environment variable.
	getenv func(string) string

	strs  map[string]*string
	lists map[string]*[]string
	bools map[string]*bool
}

// The settings each command reads (see config.Use): its --help lists only
// their flags, and only their ROUTEKEEPER_* variables are bound.
const (
	runSettings  = config.UseAll
	diffSettings = config.UseTarget | config.UsePlan | config.UseCloud | config.UseNodes | config.UseAssociation
	// doctor and routes list make run's observe and decide, so they read
	// the association settings too.
	doctorSettings  = config.UseTarget | config.UsePlan | config.UseCloud | config.UseNodes | config.UseAssociation
	routesSettings  = config.UseTarget | config.UsePlan | config.UseCloud | config.UseNodes | config.UseAssociation
	traceSettings   = config.UseTarget | config.UseCloud | config.UseNodes
	migrateSettings = config.UseTarget | config.UsePlan | config.UseCloud | config.UseWrites
)

// register adds --config and the flags of the settings in the groups use to
// fs.
func (f *configFlags) register(fs *pflag.FlagSet, use config.Use) {
	fs.StringVar(&f.file, "config", "", "configuration file (YAML); flags and ROUTEKEEPER_* variables override its settings")
	f.strs = map[string]*string{}
	f.lists = map[string]*[]string{}
	f.bools = map[string]*bool{}
	for _, s := range config.Settings() {
		if !s.UsedBy(use) {
			continue
		}
		usage := s.Usage
		if s.Default != "" && s.Kind != config.KindBool && !strings.Contains(usage, "(default") {
			usage += " (default " + s.Default + ")"
		}
		switch {
		case s.Kind.IsList():
			p := new([]string)
			fs.StringSliceVarP(p, s.Flag, s.Short, nil, usage)
			f.lists[s.Path] = p
		case s.Kind == config.KindBool:
			p := new(bool)
			fs.BoolVarP(p, s.Flag, s.Short, false, usage)
			f.bools[s.Path] = p
		default:
			p := new(string)
			fs.VarP(&textValue{p: p, typ: flagType(s.Kind)}, s.Flag, s.Short, usage)
			f.strs[s.Path] = p
		}
	}
}

// load reads the configuration: the --config file (or nothing), then every
// flag or variable that was given, then azure.json and the defaults, and
// validates it. Every error is a usage error (exit 2) that names the file or
// flag, the field and the value.
func (f *configFlags) load(fs *pflag.FlagSet) (*config.Config, error) {
	var cfg *config.Config
	if f.file != "" {
		c, err := config.Read(f.file)
		if err != nil {
			return nil, configError(err)
		}
		cfg = c
	} else {
		cfg = config.New()
	}
	if f.getenv != nil {
		cfg.SetInCluster(f.getenv("KUBERNETES_SERVICE_HOST") != "")
	}
	var probs config.Problems
	for _, s := range config.Settings() {
		fl := fs.Lookup(s.Flag)
		if fl == nil || !fl.Changed {
			continue
		}
		var vals []string
		switch {
		case s.Kind.IsList():
			vals = *f.lists[s.Path]
		case s.Kind == config.KindBool:
			vals = []string{strconv.FormatBool(*f.bools[s.Path])}
		default:
			vals = []string{*f.strs[s.Path]}
		}
		if err := cfg.Set(s.Path, vals, f.source(s.Flag)); err != nil {
			var ps config.Problems
			if errors.As(err, &ps) {
				probs = append(probs, ps...)
			} else {
				return nil, usageError(err)
			}
		}
	}
	if len(probs) > 0 {
		return nil, configError(probs)
	}
	if err := cfg.Complete(); err != nil {
		return nil, configError(err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, configError(err)
	}
	return cfg, nil
}

// source names where a flag's value came from for messages.
func (f *configFlags) source(flag string) string {
	env := envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
	if f.getenv != nil && f.getenv(env) != "" {
		return "--" + flag + " or " + env
	}
	return "--" + flag
}

// configError makes a usage error of a configuration problem; several
// problems go one per line under a heading.
func configError(err error) error {
	var ps config.Problems
	if errors.As(err, &ps) && len(ps) > 1 {
		lines := make([]string, len(ps))
		for i, p := range ps {
			lines[i] = "  " + p.String()
		}
		return usageError(fmt.Errorf("%d problems in the configuration:\n%s%w", len(ps), strings.Join(lines, "\n"), silentProblems{ps}))
	}
	return usageError(err)
}

// silentProblems carries the problems for errors.As without repeating them
// in the message.
type silentProblems struct{ ps config.Problems }

func (silentProblems) Error() string   { return "" }
func (s silentProblems) Unwrap() error { return s.ps }

// textValue is a flag holding text that config.Set parses later (so that
// flags, variables and the file give the same messages); typ is what help
// shows as its type.
type textValue struct {
	p   *string
	typ string
}

func (v *textValue) String() string     { return *v.p }
func (v *textValue) Set(s string) error { *v.p = s; return nil }
func (v *textValue) Type() string       { return v.typ }

func flagType(k config.Kind) string {
	switch k {
	case config.KindInt:
		return "int"
	case config.KindDuration:
		return "duration"
	case config.KindPath:
		return "file"
	default:
		return "string"
	}
}

// loadConfig reads a command's configuration: --config, then flags and
// ROUTEKEEPER_* variables; errors are usage errors (exit 2).
func (a *shell) loadConfig(cmd *cobra.Command, cf *configFlags) (*config.Config, error) {
	cf.getenv = a.getenv
	return cf.load(cmd.Flags())
}
