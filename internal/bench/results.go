package bench

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// WriteResults writes summary.json, summary.csv, report.html (and vLLM's result files
// with resultFormat vllm) into dir, each atomically; the page's charts come from col,
// which aggregated sum's levels.
func WriteResults(dir, resultFormat string, sum *report.Summary, col *report.Collector) error {
	var js bytes.Buffer
	if err := report.WriteJSON(&js, sum); err != nil {
		return err
	}
	errs := []error{
		atomicfile.Write(filepath.Join(dir, "summary.json"), func(w io.Writer) error { _, err := w.Write(js.Bytes()); return err }),
		atomicfile.Write(filepath.Join(dir, "summary.csv"), func(w io.Writer) error { return report.WriteCSV(w, sum) }),
		atomicfile.Write(filepath.Join(dir, "report.html"), func(w io.Writer) error {
			return report.WriteHTML(w, sum, col.Charts(sum))
		}),
	}
	if resultFormat == "vllm" {
		for i := range sum.Levels {
			errs = append(errs, atomicfile.Write(filepath.Join(dir, report.VLLMFile(sum, i)), func(w io.Writer) error {
				return report.WriteVLLM(w, sum, i, col.VLLMRequests(i))
			}))
		}
	}
	return errors.Join(errs...)
}

// Rewrite writes the run in dir again into outDir (made if missing): sum's figures
// recomputed from the records by cfg (report.Recompute), and the records beside them, so
// that outDir holds a whole run that report, compare and merge read again; in place, the
// records are never touched. The recomputation's notes (records it took as they stand)
// come back even when a later step fails; another run's records in outDir are a
// *record.OccupiedError.
func Rewrite(dir, outDir, resultFormat string, sum *report.Summary, cfg metrics.Config) (notes []string, err error) {
	col, err := report.Recompute(dir, sum, cfg, resultFormat == "vllm")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return col.Notes(), err
	}
	if err := record.CopyInto(dir, outDir); err != nil {
		return col.Notes(), err
	}
	return col.Notes(), WriteResults(outDir, resultFormat, sum, col)
}

// ResultsError is a run whose records were written but whose summary files were not (a
// full disk, a folder made read-only): 'llmbench report Dir' writes them from the records.
type ResultsError struct {
	Dir string
	Err error
}

func (e *ResultsError) Error() string { return "writing the results: " + e.Err.Error() }
func (e *ResultsError) Unwrap() error { return e.Err }

// RunFiles lists the files of a run in dir (records, summaries, report.html, vLLM results);
// none when dir does not exist or holds no run. An empty folder is not a run: scripts
// create them.
func RunFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		switch {
		case e.IsDir():
		case n == record.FormatJSONL.FileName(), n == record.FormatCompact.FileName(),
			n == "summary.json", n == "summary.csv", n == "report.html", n == "vllm.json",
			strings.HasPrefix(n, "vllm-") && strings.HasSuffix(n, ".json"):
			out = append(out, n)
		}
	}
	return out
}

// writeSummaryJSON writes dir/summary.json atomically.
func writeSummaryJSON(dir string, sum *report.Summary) error {
	return atomicfile.Write(filepath.Join(dir, "summary.json"), func(w io.Writer) error { return report.WriteJSON(w, sum) })
}
