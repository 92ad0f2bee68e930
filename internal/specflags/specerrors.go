package specflags

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"

	"github.com/spf13/pflag"
)

// specSlot marks where the Spec's problems with its fields (keys: fielderr.Error.Key) are
// said among the flags' own: where those flags are read, so that the problems keep the
// flags' order.
type specSlot []string

func (specSlot) Error() string { return "" }

func (r *resolver) spec(keys ...string) { r.errs = append(r.errs, specSlot(keys)) }

// said is every problem, in order: the flags' own, with the Spec's (bench's) in their
// slots, and those of no slot after them.
func (r *resolver) said(spec []error) []error {
	var out []error
	for _, err := range r.errs {
		slot, ok := err.(specSlot)
		if !ok {
			out = append(out, err)
			continue
		}
		spec = slices.DeleteFunc(spec, func(e error) bool {
			var field *fielderr.Error
			if errors.As(e, &field) && slices.Contains(slot, field.Key()) {
				out = append(out, r.specError(field))
				return true
			}
			return false
		})
	}
	for _, e := range spec {
		out = append(out, said(e))
	}
	return out
}

// said is a problem of bench's with the Spec in the words of the flags behind it: a field's
// (Named) or an *InvalidError's (Invalid); any other as it is.
func said(err error) error {
	return fielderr.Map(err, func(e error) error {
		if invalid := Invalid(e); invalid != nil {
			return invalid
		}
		return Named(e)
	})
}

// Named is err, a problem of bench's or load's with a field of the Spec or of a level
// (a *fielderr.Error), said as "--flag: problem" by the flags that set that field; err as
// it is where it is no field's that a flag sets.
func Named(err error) error {
	var field *fielderr.Error
	if errors.As(err, &field) {
		if _, ok := specFlagNames[field.Field]; ok {
			return NamedFlags(err, specFlagNames)
		}
	}
	return levelError(err) // a level's, which load refused
}

// specMessages say the Spec's problems (its Validate's and its setters'), by field key, as
// the flags that set those fields do (%v: bench's words); a field not here is said as
// "--flag: problem" (Named).
var specMessages = map[string]string{
	"Timeout": "--timeout %v", "IdleTimeout": "--idle-timeout %v", "Telemetry.Interval": "--metrics-interval %v",
	"Balance,More": "--balance %v; give --url once for each", "Requests,Base.Duration": "--requests and --duration: %v",
	"NoStream,API": "--stream=false: %v; leave --stream out", "Workload.Turns,API": "--turns %v",
	"Images": "--images, --image-format: %v", "Images,API": "--images %v", "Images.Width,Images.Height": "--image-size: %v", "Temperature": "--temperature %v", "TopP": "--top-p %v",
	"Search,Judge.Metrics.SLOs": "--search %v, e.g. --slo 'tpot:p99<=50ms'",
	"Search,Levels":             "--search %v: drop --concurrency/--rate",
	"Tokenizer":                 "--tokenizer %v: drop it, or give a tokenizer.json or an encoding",
	"ChatTemplate":              "--chat-template: %v", "ChatTemplate,API": "--chat-template: --api %v",
	"Tokenizer,ChatTemplate": "--tokenizer %v (--chat-template none sizes message text alone)",
	"Tools":                  "--tools %v", "Tools,ToolsFile": "--tools and --tools-file: %v", "ToolsFile": "--tools-file: %v",
	"Tools,API": "--tools, --tools-file %v", "ToolChoice,API": "--tool-choice: %v; leave it out", "ToolChoice": "--tool-choice: %v",
	"ToolChoice,Tools": "--tool-choice: %v (give --tools N or --tools-file)",
}

// invalidMessages say bench's *InvalidError problems with its fields (keys:
// fielderr.Error.Key) as the flags that set those fields do (%v: bench's words).
var invalidMessages = map[string]string{
	"SimProfile": "--sim: %v", "ModelConfig": "--model-config: %v", "Balance": "--balance %v",
	"Tokenizer": "--tokenizer: %v", "Tokenizer,URL": "--tokenizer server needs --url (%v)", "URL": "--url: %v",
	"Pricing.GPUs,Pricing.USDPerGPUHour": "--gpus needs --gpu-price, %v",
}

// Invalid is the problem of err, a *bench.InvalidError (a usage error: the flags' to fix),
// in the words of the flags behind its field where it names one; nil where err is none.
func Invalid(err error) error {
	var invalid *bench.InvalidError
	if !errors.As(err, &invalid) {
		return nil
	}
	var field *fielderr.Error
	if errors.As(invalid.Err, &field) {
		if format, ok := invalidMessages[field.Key()]; ok {
			return fmt.Errorf(format, field.Err)
		}
	}
	return invalid.Err
}

// specError says a problem of the Spec's as the flags that set its fields do.
func (r *resolver) specError(e *fielderr.Error) error {
	const whole = "--slo %v, and %s: drop the term (e2el, the whole response's latency, is measured), or stream the responses"
	switch e.Key() {
	case "Judge.Metrics.SLOs[],API":
		return fmt.Errorf(whole, e.Err, "--api "+r.c.API+" answers in one document, with no tokens streamed")
	case "Judge.Metrics.SLOs[],NoStream":
		return fmt.Errorf(whole, e.Err, "--stream=false asks for each response as one document")
	}
	if err := fieldError(e); err != error(e) {
		return err
	}
	return Named(e)
}

// fieldError is err said as the flags behind its field do where specMessages words it, else
// err as it is.
func fieldError(err error) error {
	var field *fielderr.Error
	if errors.As(err, &field) {
		if format, ok := specMessages[field.Key()]; ok {
			return fmt.Errorf(format, field.Err)
		}
	}
	return err
}

// specFlagNames are the flags that set the Spec's fields (their specFields), by field, for
// bench's errors: run's, then simulate's own; a field two flags set (the API key, the tools)
// is said as the first bound's.
var specFlagNames = func() map[string]string {
	var f Flags
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	f.Bind(fs, true)
	f.bindModelConfig(specFlagSet{fs, f.writers})
	return FieldFlags(fs, specFields)
}()

// FieldFlags are fs's flags by each field their annotation key names, the first bound's
// where two set a field.
func FieldFlags(fs *pflag.FlagSet, key string) map[string]string {
	names := map[string]string{}
	inBindOrder(fs, func(fl *pflag.Flag) {
		for _, field := range fl.Annotations[key] {
			if _, ok := names[field]; !ok && field != "" {
				names[field] = fl.Name
			}
		}
	})
	return names
}

// levelFlagNames are the flags that set load.Level's fields, for its errors: the Spec's
// Base's and Levels' fields, and its Requests, each level's count.
var levelFlagNames = func() map[string]string {
	names := flagNamesUnder("Base.", "Levels[].")
	names["Requests"] = specFlagNames["Requests"]
	return names
}()

// agentFlagNames are the flags that set workload.Agent's fields, for its errors.
var agentFlagNames = flagNamesUnder("Workload.Agent.")

// flagNamesUnder are specFlagNames' flags of the fields under prefixes, by the path below.
func flagNamesUnder(prefixes ...string) map[string]string {
	names := map[string]string{}
	for field, name := range specFlagNames {
		for _, p := range prefixes {
			if f, ok := strings.CutPrefix(field, p); ok {
				names[f] = name
			}
		}
	}
	return names
}

// levelError names the flag behind a load.Level problem.
func levelError(err error) error { return NamedFlags(err, levelFlagNames) }

// NamedFlags names the flags (names: a field's flag, without its dashes) behind each
// fielderr.Error in err (the Spec's, or any typed configuration's), one of several joined by
// commas each, through nested joins; an error of no field named there is kept as it is.
func NamedFlags(err error, names map[string]string) error {
	return fielderr.Map(err, func(err error) error { return namedFlags(err, names) })
}

// namedFlags names the flags behind err, one problem (NamedFlags).
func namedFlags(err error, names map[string]string) error {
	var field *fielderr.Error
	if !errors.As(err, &field) {
		return err
	}
	var flags []string
	for _, f := range strings.Split(field.Field, ",") {
		if name, ok := names[f]; ok {
			flags = append(flags, "--"+name)
		}
	}
	if len(flags) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(flags, ", "), field.Err)
}
