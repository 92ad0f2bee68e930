package specflags

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/workload"

	"github.com/spf13/pflag"
)

// flagWriter writes one flag back from a resolved run: the values that, given again, resolve
// to the same run; none where the flag is at its default or another flag carries it.
type flagWriter func(c specRun) []string

// specRun is what Args writes: the run, and how the console shows it.
type specRun struct {
	*bench.Spec
	Console
}

// specFlagSet binds the flags of run, simulate and plan that describe the run (plan's own:
// planSpaceFlags), each with the Spec's fields it sets and how it is written back.
type specFlagSet struct {
	*pflag.FlagSet
	writers map[string]flagWriter
}

func newSpecFlagSet(fs *pflag.FlagSet) specFlagSet {
	return specFlagSet{fs, map[string]flagWriter{}}
}

// specFields annotates a flag that describes the run with the Spec's fields it sets,
// as fielderr keys them (Error.Key), whose problems are said as the flag's (specFlagNames);
// "" for the console's.
const specFields = "spec-fields"

// specVar binds the flag name to p by bind (fs's Var of p's type), with the Spec's fields
// it sets (comma-separated) and, for a flag whose value is not its field's as it is, write.
func specVar[T any](fs specFlagSet, bind func(*T, string, T, string), p *T, name string, def T, usage, fields string, write ...flagWriter) {
	bind(p, name, def, usage)
	fs.spec(name, fields, write...)
}

// spec records that the flag bound as name sets fields, written back by write (none
// given: as its value, setValue).
func (fs specFlagSet) spec(name, fields string, write ...flagWriter) {
	_ = fs.SetAnnotation(name, specFields, strings.Split(fields, ","))
	fl := fs.Lookup(name)
	fs.writers[name] = append(write, func(specRun) []string { return setValue(fl) })[0]
}

// none writes a flag whose setting another flag carries (--api-key-file's key as --api-key,
// --config's settings as the flags they set).
func none(specRun) []string { return nil }

// setValue writes a flag bound straight to its field as the field's value where it is set:
// a bool's not its default, another's not its type's zero.
func setValue(fl *pflag.Flag) []string {
	v := fl.Value.String()
	if fl.Value.Type() == "bool" {
		return when(v != fl.DefValue, v)
	}
	return when(v != "0" && v != "0s", Str(v)...)
}

// Fields are the Spec's fields flag fl sets, as fielderr keys them ("" for the console's);
// none for a flag that does not describe the run.
func Fields(fl *pflag.Flag) []string { return fl.Annotations[specFields] }

// inBindOrder visits fs's flags in the order they were bound: the order Args writes them
// in, which plan's check command keeps.
func inBindOrder(fs *pflag.FlagSet, visit func(*pflag.Flag)) {
	sorted := fs.SortFlags
	fs.SortFlags = false
	fs.VisitAll(visit)
	fs.SortFlags = sorted
}

// Args is the command line that resolves to c and o again: each flag of run's (live)
// or simulate's that describes the run and that keep accepts (one the command binds, say),
// in the order bound. true and false are joined to their flag with "=", which a bool flag
// needs and every flag takes. The key and headers are written as they are: what prints a
// command line (the check command) keeps to the traffic.
func Args(c *bench.Spec, o Console, live bool, keep func(name string) bool) []string {
	var f Flags
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	if live {
		f.Bind(fs, true)
	} else {
		f.BindSimulate(fs)
	}
	f.spec, f.con = *c, o // what the flags bound straight to their fields read
	var args []string
	inBindOrder(fs, func(fl *pflag.Flag) {
		if write, ok := f.writers[fl.Name]; ok && keep(fl.Name) {
			args = FlagArgs(args, fl.Name, write(specRun{c, o}))
		}
	})
	return args
}

// FlagArgs appends a flag given each of vals. It and the writers below (List, Str, Num) write
// a command's own flags back too (plan's, in its round-trip test).
func FlagArgs(args []string, name string, vals []string) []string {
	for _, v := range vals {
		if v == "true" || v == "false" {
			args = append(args, "--"+name+"="+v)
		} else {
			args = append(args, "--"+name, v)
		}
	}
	return args
}

// List writes a list flag's values, comma-separated.
func List[T any](vs []T, format func(T) string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, format(v))
	}
	return Str(strings.Join(out, ","))
}

// when is v if ok, else nothing: a flag at its default, or unset.
func when(ok bool, v ...string) []string {
	if !ok || len(v) == 0 {
		return nil
	}
	return v
}

// Str writes a string flag's value; "" is unset.
func Str(s string) []string { return when(s != "", s) }

// Num writes a number; 0 is every numeric flag's default or unset. An integer is written
// in full: an int flag does not parse 1e+06.
func Num[T int | float64](v T) []string {
	if i, ok := any(v).(int); ok {
		return when(i != 0, strconv.Itoa(i))
	}
	return when(v != 0, strconv.FormatFloat(float64(v), 'g', -1, 64))
}

func numList(vs []float64) []string {
	return List(vs, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

// ptrArg writes a value given, 0 included.
func ptrArg(v *float64) []string {
	if v == nil {
		return nil
	}
	return []string{strconv.FormatFloat(*v, 'g', -1, 64)}
}

func dur(d time.Duration) []string { return when(d != 0, d.String()) }

func headerArgs(c specRun) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		for _, v := range c.Headers[k] {
			out = append(out, k+": "+v)
		}
	}
	return out
}

func jsonArg(m map[string]any) []string {
	b, _ := json.Marshal(m) // read from JSON, so it writes
	return when(m != nil, string(b))
}

// sessionHeaderArgs writes the header a session-balanced run sends its key in ("" none);
// otherwise a header given for a router in front of one --url.
func sessionHeaderArgs(c specRun) []string {
	return when(c.Balance == route.Session || c.SessionHeader != "", c.SessionHeader)
}

// ladderArg writes the levels' loads of one loop (none for the default ladder, which no
// flag gave, or a staged level).
func ladderArg(c specRun, of func(load.Level) float64) []string {
	if c.DefaultLoad || len(c.Levels) == 0 || c.Levels[0].Stages.Staged() {
		return nil
	}
	var vs []float64
	for _, l := range c.Levels {
		if v := of(l); v > 0 {
			vs = append(vs, v)
		}
	}
	return numList(vs)
}

func stagesArg(c specRun) []string {
	if len(c.Levels) == 0 {
		return nil
	}
	return Str(c.Levels[0].Stages.String())
}

// chatTemplateArg writes the template chat prompts are sized with, or none where they are
// sized by their text alone (not where the server counts them).
func chatTemplateArg(c specRun) []string {
	switch {
	case c.ChatTemplate != nil:
		return []string{c.ChatTemplate.Path()}
	case c.ChatOnServer || !c.Live:
		return nil
	}
	return []string{"none"}
}

func tokenPrice(c specRun, side func(metrics.TokenPrice) float64) []string {
	if p := c.Judge.Pricing.Tokens; p != nil {
		return []string{strconv.FormatFloat(side(*p), 'g', -1, 64)} // 0 included
	}
	return nil
}

// agentDist writes one of an agentic workload's distributions (a zero one: none, "0").
func agentDist(c specRun, d workload.Dist) []string {
	if s := d.String(); s != "" || !c.Workload.Agent.On() {
		return when(c.Workload.Agent.On(), s)
	}
	return []string{"0"}
}
