package plan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/sim"
)

// Files are the files WriteFiles writes into a plan's folder.
var Files = []string{"plan.json", "plan.html", "best.yaml"}

// Held is the first of Files that dir holds already (an earlier plan's), "" for none.
func Held(dir string) string {
	for _, name := range Files {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return name
		}
	}
	return ""
}

// WriteFiles writes plan.json, plan.html and, when a candidate meets the SLOs, best.yaml
// (headed by check, the command that re-simulates it) into dir, which exists, each
// atomically.
func WriteFiles(dir string, pl *Plan, check string) error {
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
