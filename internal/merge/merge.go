// Package merge combines the results folders of the shards of one run (llmbench run --shard
// I/N, on several machines) into one run: every shard's records on one timeline (t = 0 is
// the earliest shard's start, by wall clock) and every figure recomputed from the union.
// It refuses shards that do not belong to one run unless forced, and warns about clocks
// that disagree.
package merge

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/rundesc"
)

// Shard is one shard's results folder, read.
type Shard struct {
	dir           string
	sum           *report.Summary
	load          rundesc.Load // summary.json "load" without "shard"
	start         time.Time    // the shard's t = 0, µs-truncated like its offsets
	shard, shards int          // 0/1 when the run was not sharded
	recs          []record.Record
	notes         []string // a truncated records file, taken as it stands
	format        record.Format
}

// Format is the format of the shard's records file.
func (s *Shard) Format() record.Format { return s.format }

// Read reads a shard's results folder: summary.json and records.jsonl.
func Read(dir string) (*Shard, error) {
	sum, err := report.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Shard{dir: dir, sum: sum, shards: 1}
	if sum.StartedAt.IsZero() {
		return nil, fmt.Errorf("%s: summary.json has no started_at, so its records cannot be placed on a common timeline", dir)
	}
	s.start = sum.StartedAt.Truncate(time.Microsecond)
	s.load = sum.Load
	if s.shard, s.shards, err = rundesc.ParseShard(s.load.Shard); err != nil {
		return nil, fmt.Errorf("%s: summary.json load.shard: %w", dir, err)
	}
	s.load.Shard = ""
	path, err := record.Find(dir)
	if err != nil {
		return nil, err
	}
	s.format = record.FormatOf(path)
	if s.recs, s.notes, err = readRecords(path); err != nil {
		return nil, err
	}
	return s, nil
}

// Problems are what Check and Combine found wrong with the shards: conflicts make the union
// meaningless (Combine refuses it unless forced); warnings make its timeline imprecise.
type Problems struct {
	Conflicts, Warnings []string
}

func (p *Problems) conflict(format string, a ...any) {
	p.Conflicts = append(p.Conflicts, fmt.Sprintf(format, a...))
}
func (p *Problems) warn(format string, a ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, a...))
}

// Check compares every shard with the first: configuration, shard numbering, clocks.
// Shards disagree about their clocks when their start instants (or their distance from a
// common --start-at) differ by more than tolerance, and refuses shards whose starts span more
// than maxSpread.
func Check(sh []*Shard, tolerance, maxSpread time.Duration) *Problems {
	p := &Problems{}
	for _, s := range sh {
		for _, n := range s.notes {
			p.warn("%s", n)
		}
	}
	ref := sh[0]
	same := func(a, b any) bool {
		// Compare as JSON values: the configs were read back from JSON, and numbers or
		// nested objects must compare by value.
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		var va, vb any
		json.Unmarshal(ja, &va)
		json.Unmarshal(jb, &vb)
		return reflect.DeepEqual(va, vb)
	}
	for _, s := range sh[1:] {
		for _, c := range []struct {
			name string
			a, b any
		}{
			{"workload", ref.sum.Workload, s.sum.Workload},
			{"load (apart from shard)", ref.load, s.load},
			{"seed", ref.sum.Seed, s.sum.Seed},
			{"target", targetOf(ref), targetOf(s)},
			{"percentiles", ref.sum.Percentiles, s.sum.Percentiles},
			{"slo", ref.sum.SLO, s.sum.SLO},
			{"price", ref.sum.Price, s.sum.Price},
		} {
			if !same(c.a, c.b) {
				p.conflict("%s and %s differ in %s: %s", ref.dir, s.dir, c.name, strings.Join(fieldDiff(c.a, c.b), "; "))
			}
		}
		if len(s.sum.Levels) != len(ref.sum.Levels) {
			p.conflict("%s has %d levels, %s has %d", ref.dir, len(ref.sum.Levels), s.dir, len(s.sum.Levels))
		} else {
			for i := range s.sum.Levels {
				if a, b := ref.sum.Levels[i], s.sum.Levels[i]; a.Name != b.Name {
					p.conflict("level %d is %q in %s but %q in %s", i, a.Name, ref.dir, b.Name, s.dir)
				}
			}
		}
	}

	// Shard numbering: the same N, distinct I, all present.
	seen := map[int]string{}
	for _, s := range sh {
		if s.shards <= 1 {
			p.conflict("%s is not a shard (its run had no --shard), so its requests would repeat another run's", s.dir)
			continue
		}
		if s.shards != ref.shards {
			p.conflict("%s is shard %d/%d but %s is of %d shards", s.dir, s.shard, s.shards, ref.dir, ref.shards)
			continue
		}
		if d, dup := seen[s.shard]; dup {
			p.conflict("%s and %s are both shard %d/%d", d, s.dir, s.shard, s.shards)
		}
		seen[s.shard] = s.dir
	}
	if ref.shards > 1 {
		var missing []string
		for i := range ref.shards {
			if _, ok := seen[i]; !ok {
				missing = append(missing, rundesc.ShardString(i, ref.shards))
			}
		}
		if len(missing) > 0 {
			p.warn("shards %s are missing: the merged run is only part of the plan", strings.Join(missing, ", "))
		}
	}

	// Clocks. With --start-at every shard meant to start at one instant: a shard that
	// started further from it either woke late or has a clock that disagrees.
	startAt := ref.load.StartAt
	if startAt != "" {
		at, err := time.Parse(time.RFC3339Nano, startAt)
		if err == nil {
			for _, s := range sh {
				if d := s.start.Sub(at); d.Abs() > tolerance {
					p.warn("%s started %s from its --start-at %s (tolerance %s): its clock disagrees with the others' or it woke late", s.dir, d.Round(time.Microsecond), startAt, tolerance)
				}
			}
		}
	}
	lo, hi := sh[0], sh[0]
	for _, s := range sh {
		if s.start.Before(lo.start) {
			lo = s
		}
		if s.start.After(hi.start) {
			hi = s
		}
	}
	if spread := hi.start.Sub(lo.start); spread > maxSpread {
		// Shards this far apart did not load the target together: the merged levels would
		// add up a load no instant of the run saw.
		p.conflict("shards' start instants span %s (%s first, %s last), more than --max-start-spread %s: their loads did not add up to the planned one; rerun them with one --start-at far enough ahead for every shard", spread.Round(time.Microsecond), lo.dir, hi.dir, maxSpread)
	} else if spread > tolerance {
		if startAt == "" {
			p.warn("shards were started without --start-at and %s apart (%s first, %s last): their loads did not overlap as one run's would", spread.Round(time.Microsecond), lo.dir, hi.dir)
		} else {
			p.warn("shards' start instants span %s (%s first, %s last), more than the tolerance %s", spread.Round(time.Microsecond), lo.dir, hi.dir, tolerance)
		}
	}
	return p
}

// targetOf is the shard's target for comparison. A shard run with no --url benchmarks its
// own in-process simulator on a random port: the port is not part of what was measured.
func targetOf(s *Shard) report.Target {
	t := s.sum.Target
	if s.load.SimProfile != "" && s.load.Mode == rundesc.ModeRun {
		t.URL = "(in-process simulator)"
	}
	return t
}

// rebase moves a record's offsets by shift (the shard's t = 0 minus the merged t = 0).
func rebase(r *record.Record, shift time.Duration) {
	neverSent := r.Error != nil && r.Sent == 0 // keep the "never sent" marker
	r.Scheduled += shift
	if !neverSent {
		r.Sent += shift
	}
	r.Done += shift
	if r.FirstContent != 0 {
		r.FirstContent += shift
	}
	if r.ToolCallTokens > 0 {
		r.FirstToolCall += shift
	}
	ev := record.Events{Base: r.Events.Base + shift}
	r.Events.Each(func(_ int, t time.Duration, n int) { ev.Append(t+shift, n) })
	r.Events = ev
}

// Combine puts every shard's records on the earliest shard's timeline and recomputes every
// figure from the union, as one machine sending all the requests would have; the summary
// says it was written by llmbench version. Repeated requests are conflicts added to p (the
// first copy is kept); with conflicts (Check's included) Combine refuses unless force.
// Records come back sorted by level, then finish time.
func Combine(sh []*Shard, force bool, p *Problems, version string) (*report.Summary, []record.Record, *report.Collector, error) {
	t0 := sh[0].start
	for _, s := range sh {
		if s.start.Before(t0) {
			t0 = s.start
		}
	}
	type key struct{ level, index int }
	owner := map[key]string{}
	var all []record.Record
	dups := 0
	for _, s := range sh {
		shift := s.start.Sub(t0)
		for i := range s.recs {
			r := &s.recs[i]
			k := key{r.Level, r.Index}
			if d, dup := owner[k]; dup {
				if dups < 2 {
					p.conflict("level %d request %d is in both %s and %s", r.Level, r.Index, d, s.dir)
				}
				dups++
				continue
			}
			owner[k] = s.dir
			rebase(r, shift)
			all = append(all, *r)
		}
	}
	if dups > 2 {
		p.conflict("... %d requests in more than one folder in all", dups)
	}
	if len(p.Conflicts) > 0 && !force {
		lines := make([]string, len(p.Conflicts))
		for i, c := range p.Conflicts { // each within a terminal under the error's 2-column indent
			lines[i] = console.Wrap(c, 2, 2, console.Width)
		}
		return nil, nil, nil, errors.New("the shards do not belong to one run:\n" + strings.Join(lines, "\n") + "\n(--force merges them anyway)")
	}
	slices.SortStableFunc(all, func(a, b record.Record) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(a.Done, b.Done), cmp.Compare(a.Index, b.Index))
	})

	ref := sh[0].sum
	slos, err := metrics.ParseSLOs(ref.SLO)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: summary.json slo: %w", sh[0].dir, err)
	}
	col := report.NewCollector(metrics.Config{Percentiles: ref.Percentiles, SLOs: slos})
	col.SharedPrefix = ref.Workload.PrefixTokens + ref.Workload.ChatPrefixTokens
	for i := range all {
		col.Add(&all[i])
	}
	load := sh[0].load
	var names []string
	for _, s := range sh {
		if s.shards > 1 {
			names = append(names, rundesc.ShardString(s.shard, s.shards))
		}
	}
	slices.Sort(names)
	load.MergedShards = names
	if w := append(slices.Clone(p.Conflicts), p.Warnings...); len(w) > 0 {
		load.MergeWarnings = w
	}
	sum := &report.Summary{
		Schema: report.SchemaV3, Version: version, StartedAt: t0.UTC(),
		RunStartUnix: float64(t0.UnixMicro()) / 1e6, Seed: ref.Seed, Target: ref.Target,
		Workload: ref.Workload, Load: load, Percentiles: ref.Percentiles, SLO: ref.SLO,
		Price: ref.Price,
	}
	var reasons []report.EndReason
	for _, s := range sh {
		reasons = append(reasons, s.sum.EndReason)
	}
	sum.EndReason = report.JoinEndReasons(reasons)

	nLevels := 0
	for _, s := range sh {
		nLevels = max(nLevels, len(s.sum.Levels))
	}
	for i := range nLevels {
		var l report.Level
		for _, s := range sh {
			if i < len(s.sum.Levels) {
				sl := s.sum.Levels[i]
				if l.Name == "" {
					l.Name, l.Concurrency, l.Rate, l.Stages = sl.Name, sl.Concurrency, sl.Rate, sl.Stages
				}
				l.Partial = l.Partial || sl.Partial
				if l.EndReason == "" || (sl.EndReason != "" && sl.EndReason != l.EndReason && sl.EndReason != "requests" && sl.EndReason != "duration") {
					l.EndReason = sl.EndReason // a shard stopped early says why the merged level ended
				}
				if l.RunSeeds == nil {
					l.RunSeeds = sl.RunSeeds
				}
			}
		}
		l.Level = col.Level(i)
		l.PrefixCacheHits = col.PrefixCacheHits(i)
		l.Endpoints = col.Endpoints(i, sum.Target.Endpoints)
		l.Stages = col.Stages(i, l.Stages)
		sum.Levels = append(sum.Levels, l)
	}
	sum.Judge()
	return sum, all, col, nil
}

// readRecords reads a shard's records.jsonl; one whose last line a killed writer cut short
// is taken as it stands, with a note saying so.
func readRecords(path string) (recs []record.Record, notes []string, err error) {
	err = record.EachInFile(path, func(r *record.Record) error { recs = append(recs, *r); return nil })
	if err != nil {
		if !errors.Is(err, record.ErrTruncated) {
			return nil, nil, err
		}
		notes = append(notes, err.Error())
	}
	return recs, notes, nil
}

// fieldDiff names the fields in which two descriptions differ, each with its two values
// ("input_tokens 512 vs 100"), rather than printing both whole.
func fieldDiff(a, b any) []string {
	var ma, mb map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if json.Unmarshal(ja, &ma) != nil || json.Unmarshal(jb, &mb) != nil {
		return []string{string(ja) + " vs " + string(jb)}
	}
	keys := slices.Sorted(maps.Keys(ma))
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	var out []string
	for _, k := range keys {
		va, vb := string(ma[k]), string(mb[k])
		if va == vb {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s vs %s", k, orNone(va), orNone(vb)))
	}
	return out
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
