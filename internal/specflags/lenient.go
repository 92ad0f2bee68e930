package specflags

import (
	"fmt"

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

// Lenient makes f keep its parse error (ParseErrors) instead of stopping the parse.
func Lenient(f *pflag.Flag) {
	if _, ok := f.Value.(*lenientValue); !ok {
		f.Value = &lenientValue{Value: f.Value, name: f.Name}
	}
}

// ParseErrors are the parse errors fs's flags kept (Lenient), in the flags' order.
func ParseErrors(fs *pflag.FlagSet) []error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if v, ok := f.Value.(*lenientValue); ok && v.err != nil {
			errs = append(errs, v.err)
		}
	})
	return errs
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
