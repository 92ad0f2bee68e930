package plan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
)

// Files are the files WriteFiles writes into a plan's folder.
var Files = []string{"plan.json", "plan.html", "best.yaml"}

// DefaultDir is the folder of a plan made at now, when none was given: a new one each
// second.
func DefaultDir(now time.Time) string {
	return "llmbench-results/plan-" + now.UTC().Format("20060102T150405Z")
}

// HeldError is a folder that holds an earlier plan's File, which a plan would replace.
type HeldError struct{ Dir, File string }

func (e *HeldError) Error() string { return fmt.Sprintf("%s already holds a plan (%s)", e.Dir, e.File) }

// CheckOutput refuses out.Dir, with a *HeldError, when it holds an earlier plan's files
// and out.Overwrite does not say to replace them.
func CheckOutput(out bench.Output) error {
	for _, name := range Files {
		if _, err := os.Stat(filepath.Join(out.Dir, name)); err == nil && !out.Overwrite {
			return &HeldError{Dir: out.Dir, File: name}
		}
	}
	return nil
}

// WriteFiles writes plan.json, plan.html and, when a candidate meets the SLOs, best.yaml
// (headed by check, the command that re-simulates it) into dir, made if need be (a folder
// it cannot make is a *fielderr.Error of Output.Dir, the Spec's), each atomically.
func WriteFiles(dir string, pl *Plan, check string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &fielderr.Error{Field: "Output.Dir", Err: err}
	}
	var errs []error
	if b := pl.BestCandidate(); b != nil {
		pl.BestProfile = "best.yaml"
		p := b.Profile()
		if p.Cost.Kind == sim.CostTable && !filepath.IsAbs(p.Cost.File) {
			// best.yaml lies elsewhere than the profile whose table it names.
			if abs, err := filepath.Abs(filepath.Join(filepath.Dir(pl.Profile), p.Cost.File)); err == nil {
				p.Cost.File = abs
			}
		}
		header := fmt.Sprintf("llmbench plan's chosen deployment: %s\nfor %s at %s %s meeting %s (plan.json's candidate 1).\nreplicas is the fewest that meet the SLOs; one fewer does not. Check it:\n  %s",
			b.Describe(), pl.Model, strconv.FormatFloat(pl.Rate, 'g', 4, 64), pl.RateUnit, pl.SLO, check)
		errs = append(errs, atomicfile.Write(filepath.Join(dir, "best.yaml"), func(w io.Writer) error {
			_, err := w.Write(p.YAML(header))
			return err
		}))
	}
	errs = append(errs,
		atomicfile.Write(filepath.Join(dir, "plan.json"), func(w io.Writer) error { return WriteJSON(w, pl) }),
		atomicfile.Write(filepath.Join(dir, "plan.html"), func(w io.Writer) error { return WriteHTML(w, pl) }))
	return errors.Join(errs...)
}
