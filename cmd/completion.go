package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/request"
)

// pathCompletion completes the PATH argument with the API's path templates.
func pathCompletion(method string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, p := range request.PathTemplates(method) {
			if strings.HasPrefix(p, toComplete) {
				out = append(out, p)
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// methodThenPath completes METHOD, then the API's paths for it: `request` and `explain`.
func methodThenPath(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, cobra.ShellCompDirectiveNoFileComp
	case 1:
		return pathCompletion(strings.ToUpper(args[0]))(nil, nil, toComplete)
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
