// Package fielderr is the error a typed configuration's Validate returns about one of its
// fields: the field as the code names it (Output.Dir, Space.GPUs), which a command maps to
// what its users know (a flag), so that packages below the command name no flags.
package fielderr

import (
	"errors"
	"fmt"
	"regexp"
)

// Error is a problem with Field, or with several fields together (their names joined by
// commas).
type Error struct {
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Key is the Error's Field without its indices (Levels[2].Rate is Levels[].Rate): one key
// for the same field of every element, which a command words its problems by.
func (e *Error) Key() string { return index.ReplaceAllString(e.Field, "[]") }

var index = regexp.MustCompile(`\[[0-9]+\]`)

// New is the Error about field whose problem format and a describe.
func New(field, format string, a ...any) *Error {
	return &Error{Field: field, Err: fmt.Errorf(format, a...)}
}

// Split is the errors an errors.Join holds (a Validate's problems), or err alone (none when
// nil).
func Split(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// Map is err with f applied to each of its problems, a join's through nested joins, joined
// again; f(err) where err is no join (nil included).
func Map(err error, f func(error) error) error {
	if _, joined := err.(interface{ Unwrap() []error }); !joined {
		return f(err)
	}
	var out []error
	for _, e := range Split(err) {
		out = append(out, Map(e, f))
	}
	return errors.Join(out...)
}

// Fields are the fields of err's problems (Split), in order; a problem about no field is
// named by its message, so that a list of the fields expected never matches it.
func Fields(err error) []string {
	var out []string
	for _, e := range Split(err) {
		var f *Error
		if !errors.As(e, &f) {
			out = append(out, "not a field's: "+e.Error())
			continue
		}
		out = append(out, f.Field)
	}
	return out
}
