package validate

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/testtier"
)

var updateBounds = flag.Bool("update-bounds", false, "rewrite validation/bounds.json from today's errors (a deliberate loosening or tightening: say why in the commit)")

const boundsFile = "../../validation/bounds.json"

// guardSlack is how far, in points, a group's median |error| may move past the one
// measured when its bound was written before the guard fails: farther than a seed's
// scatter, nearer than a change of physics tuned on another family.
const guardSlack = 5

// guarded are the figures the guard holds: the ones the reality issue bounds, and E2E P50,
// which stands for decode where a source has no TPOT P50 (inference-perf's rows).
var guarded = []string{"ttft_ms.p50", "tpot_ms.p50", "output_throughput", "e2el_ms.p50"}

// bounds is validation/bounds.json: per group, per figure, the largest median |error| (%)
// the guard allows, and how many rows the group simulated when they were written.
type bounds struct {
	Description string                `json:"description"`
	Groups      map[string]groupBound `json:"groups"`
}

type groupBound struct {
	Rows      int                `json:"rows"`
	MedianPct map[string]float64 `json:"max_median_abs_pct"`
}

// TestValidationGuard simulates every visible groundtruth row at its full length and fails
// when a group's median |error| of TTFT P50, TPOT P50, throughput or E2E P50 passes its bound, or a
// group simulates fewer rows than it did: a change tuned on one model family or engine
// cannot move another unseen.
func TestValidationGuard(t *testing.T) {
	testtier.Accuracy(t, "validate over ../shared/groundtruth against validation/bounds.json (about 1.5 minutes on two cores)")
	dir := groundtruth(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no groundtruth files in %s: %v", dir, err)
	}
	var rows []Row
	for _, p := range paths {
		r, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	results, err := Run(context.Background(), rows, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]GroupResult{}
	for _, g := range Groups(results) {
		if g.Rows > 0 {
			got[g.Group.String()] = g
		}
	}
	if *updateBounds {
		b := bounds{Description: fmt.Sprintf("llmbench validate's guard (internal/validate TestValidationGuard): each group's median |error| of %s as measured when written, plus %d points; regenerate with go test ./internal/validate -run TestValidationGuard -update-bounds (LLMBENCH_ACCURACY=1)", strings.Join(guarded, ", "), guardSlack),
			Groups: map[string]groupBound{}}
		for name, g := range got {
			gb := groupBound{Rows: g.Rows, MedianPct: map[string]float64{}}
			for _, f := range guarded {
				if fe, ok := g.Figures[f]; ok && fe.N > 0 {
					gb.MedianPct[f] = math.Ceil(fe.MedianPct) + guardSlack
				}
			}
			b.Groups[name] = gb
		}
		out, _ := json.MarshalIndent(b, "", " ")
		if err := os.WriteFile(boundsFile, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(boundsFile)
	if err != nil {
		t.Fatal(err)
	}
	var b bounds
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("%s: %v", boundsFile, err)
	}
	names := make([]string, 0, len(b.Groups))
	for name := range b.Groups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want := b.Groups[name]
		g, ok := got[name]
		if !ok || g.Rows < want.Rows {
			t.Errorf("%s: %d rows simulated, %d when its bounds were written", name, g.Rows, want.Rows)
			continue
		}
		for _, f := range guarded {
			max, bounded := want.MedianPct[f]
			fe, measured := g.Figures[f]
			if bounded && measured && fe.MedianPct > max {
				t.Errorf("%s: %s median |error| %.1f %%, past its bound %.0f %%", name, f, fe.MedianPct, max)
			}
		}
	}
}
