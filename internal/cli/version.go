package cli

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `version -o json|yaml` prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// buildVersion reads the version from the binary's build information:
// the module version of a `go install ...@vX`, else "(devel)".
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v.Commit = s.Value
		}
	}
	return v
}

func (a *shell) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of routekeeper",
		Long: `Print the version of routekeeper. -o table (the default) prints one line, the
same as 'routekeeper --version'; -o json, yaml or tsv print the version, the
commit (when the build recorded it), the Go version and the platform.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			if a.humanOutput() {
				_, err := a.stdout.Write([]byte("routekeeper " + v.Version + "\n"))
				return err
			}
			return a.print(v, nil)
		},
	}
}
