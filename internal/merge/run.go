package merge

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// Options are how shards are merged: Check's clock limits, whether conflicts are forced
// through, and the llmbench version the merged summary names.
type Options struct {
	Tolerance, MaxSpread time.Duration
	Force                bool
	Version              string
}

// Merged is a run combined from its shards, not yet written.
type Merged struct {
	Shards    int
	Problems  *Problems
	Summary   *report.Summary
	Records   []record.Record
	Collector *report.Collector
	// Format is the records' format: the first shard's, should they differ.
	Format record.Format
}

// Shards reads the shards in dirs (every unreadable one reported), checks them and combines
// them into one run.
func Shards(dirs []string, opts Options) (*Merged, error) {
	var (
		shards []*Shard
		errs   []error
	)
	for _, d := range dirs {
		s, err := Read(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		shards = append(shards, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p := Check(shards, opts.Tolerance, opts.MaxSpread)
	sum, recs, col, err := Combine(shards, opts.Force, p, opts.Version)
	if err != nil {
		return nil, err
	}
	return &Merged{Shards: len(shards), Problems: p, Summary: sum, Records: recs, Collector: col, Format: shards[0].Format()}, nil
}

// Write writes the merged run into dir, which exists: its records and every results file.
func (m *Merged) Write(dir string) error {
	name := m.Format.FileName()
	if err := record.WriteFile(filepath.Join(dir, name), m.Records); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return bench.WriteResults(dir, "", m.Summary, m.Collector)
}
