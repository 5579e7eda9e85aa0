package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// NewCmdVersion builds `brellium version`: version, commit, date and Go version, one a line.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show the version, commit, build date and Go version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			v, c, d := buildInfo()
			if c == "" {
				c = "unknown"
			}
			if d == "" {
				d = "unknown"
			}
			_, err := fmt.Fprintf(f.IOStreams.Out, "brellium %s\ncommit: %s\ndate: %s\ngo: %s\n", v, c, d, runtime.Version())
			return err
		},
	}
}
