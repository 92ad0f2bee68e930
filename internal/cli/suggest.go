package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/suggest"
)

// flagError is a usage error for a flag cobra refused, with the nearest flag of cmd
// suggested for an unknown one.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if s := suggest.DidYouMean(name, names); s != "" {
			return usageError(fmt.Errorf("%s%s", msg, strings.Replace(s, "did you mean ", "did you mean --", 1)))
		}
	}
	return usageError(err)
}
