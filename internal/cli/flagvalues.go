package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/specflags"
)

// lenientFlags makes every flag of c and its subcommands keep its parse error
// (specflags.Lenient) and has each command report them all before it runs (with the errors
// of its own checks, where its flags' resolver reads them, marked resolvesFlagErrors).
func lenientFlags(c *cobra.Command) {
	c.Flags().VisitAll(specflags.Lenient)
	c.PersistentFlags().VisitAll(specflags.Lenient)
	for _, sub := range c.Commands() {
		lenientFlags(sub)
	}
}

// resolvesFlagErrors is the annotation of a command whose flags' resolver reports the
// parse errors itself (specflags.ParseErrors), beside its own checks.
const resolvesFlagErrors = "llmbench/resolves-flag-errors"

// checkFlagErrors reports the flags that did not parse, all at once, for a command that
// does not report them itself.
func checkFlagErrors(cmd *cobra.Command, _ []string) error {
	if cmd.Annotations[resolvesFlagErrors] != "" {
		return nil
	}
	if errs := specflags.ParseErrors(cmd.Flags()); len(errs) > 0 {
		return usageError(errors.Join(errs...))
	}
	return nil
}
