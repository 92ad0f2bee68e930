package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// lenientValue is a flag's value that keeps a bad value's error instead of stopping the
// parse at it, so that every invalid flag is reported at once: pflag returns the first
// error of a command line and parses no further.
type lenientValue struct {
	pflag.Value
	name string
	err  error
}

func (v *lenientValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		v.err = fmt.Errorf("invalid argument %q for \"--%s\" flag: %w", s, v.name, err)
	}
	return nil
}

// lenientFlags makes every flag of c and its subcommands keep its parse error (lenientValue)
// and has each command report them all before it runs (with the errors of its own checks,
// where its flags' resolver reads flagErrors, marked resolvesFlagErrors).
func lenientFlags(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, ok := f.Value.(*lenientValue); !ok {
			f.Value = &lenientValue{Value: f.Value, name: f.Name}
		}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		lenientFlags(sub)
	}
}

// resolvesFlagErrors is the annotation of a command whose flags' resolver reports the
// parse errors itself (flagErrors), beside its own checks.
const resolvesFlagErrors = "llmbench/resolves-flag-errors"

// flagErrors are the parse errors fs's flags kept (lenientValue), in the flags' order.
func flagErrors(fs *pflag.FlagSet) []error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if v, ok := f.Value.(*lenientValue); ok && v.err != nil {
			errs = append(errs, v.err)
		}
	})
	return errs
}

// checkFlagErrors reports the flags that did not parse, all at once, for a command that
// does not report them itself.
func checkFlagErrors(cmd *cobra.Command, _ []string) error {
	if cmd.Annotations[resolvesFlagErrors] != "" {
		return nil
	}
	if errs := flagErrors(cmd.Flags()); len(errs) > 0 {
		return usageError(errors.Join(errs...))
	}
	return nil
}

// setStrict sets a flag and returns its value's error, not keeping it on the flag (a
// config file's value is reported with its line instead).
func setStrict(fs *pflag.FlagSet, name, value string) error {
	lv, ok := fs.Lookup(name).Value.(*lenientValue)
	if !ok {
		return fs.Set(name, value)
	}
	kept := lv.err
	if err := fs.Set(name, value); err != nil {
		return err
	}
	err := lv.err
	if err == kept {
		return nil
	}
	lv.err = kept
	return err
}
