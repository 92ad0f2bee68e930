package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// collect streams records.jsonl through a Collector once, as llmbench report does, and
// returns it with the summary levels it aggregated.
func collect(r io.Reader, cfg metrics.Config) (*Collector, *Summary, error) {
	col := NewCollector(cfg)
	err := record.Each(r, func(rec *record.Record) error { col.Add(rec); return nil })
	if errors.Is(err, record.ErrTruncated) {
		col.Note(err.Error())
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	sum := &Summary{}
	for _, i := range col.Indices() {
		for len(sum.Levels) <= i {
			sum.Levels = append(sum.Levels, Level{})
		}
	}
	for i := range sum.Levels {
		sum.Levels[i].Level = col.Level(i)
	}
	return col, sum, nil
}

// prepareRecords builds the page's charts from records.jsonl.
func prepareRecords(r io.Reader) (*Charts, error) {
	col, sum, err := collect(r, metrics.Config{})
	if err != nil {
		return nil, err
	}
	return col.Charts(sum), nil
}

// chartsOf builds the page's charts from records, through their records.jsonl lines.
func chartsOf(t *testing.T, recs []record.Record) *Charts {
	t.Helper()
	var b bytes.Buffer
	for i := range recs {
		b.Write(record.AppendJSON(nil, &recs[i]))
		b.WriteByte('\n')
	}
	d, err := prepareRecords(&b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// writeHTMLRecords writes report.html of a summary.json with the charts of the records at
// path ("" for none).
func writeHTMLRecords(w io.Writer, summaryJSON []byte, path string) error {
	sum, err := ReadJSON(bytes.NewReader(summaryJSON))
	if err != nil {
		return err
	}
	var ch *Charts
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("report.html: %w", err)
		}
		defer f.Close()
		if ch, err = prepareRecords(f); err != nil {
			return fmt.Errorf("report.html: %s: %w", path, err)
		}
	}
	return WriteHTML(w, sum, ch)
}
