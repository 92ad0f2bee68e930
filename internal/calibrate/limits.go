package calibrate

import (
	"math"
	"slices"

	"github.com/llmbench/llmbench/internal/metrics"
)

// truncationShare is how far below its expected count a prompt's server count must fall
// to read as cut: tokenizers of one text differ by less (the expected count is the
// client's scaled by the server's ratio on short prompts), a cut at the context by far more.
const truncationShare = 0.8

// truncated finds a server that cuts prompts longer than its context rather than refusing
// them (Ollama past num_ctx): at concurrency 1, a prompt the server counted well below
// what its count of short prompts predicts, while the longest server counts sit together
// at one ceiling. It returns that ceiling, the context prompts are cut to; 0 when no
// prompt was cut (or the server gave no counts of its own).
func truncated(pts []Point) int {
	var ratios []float64
	type obs struct{ server, intended int }
	var all []obs
	for i := range pts {
		pt := &pts[i]
		if pt.Open || pt.Concurrency != 1 || pt.mixed() {
			continue
		}
		for _, q := range pt.Requests {
			if q.Intended <= 0 || q.Prompt <= 0 || q.Warmup {
				continue
			}
			all = append(all, obs{q.Prompt, q.Intended})
			if q.Intended <= 512 {
				ratios = append(ratios, float64(q.Prompt)/float64(q.Intended))
			}
		}
	}
	if len(ratios) == 0 || len(all) == 0 {
		return 0
	}
	r := metrics.Median(ratios)
	ceiling := 0
	for _, o := range all {
		ceiling = max(ceiling, o.server)
	}
	var cut []int
	for _, o := range all {
		if float64(o.server) < truncationShare*r*float64(o.intended) {
			cut = append(cut, o.server)
		}
	}
	if len(cut) == 0 {
		return 0
	}
	// Cut prompts end at the context, give or take what the server keeps of its template:
	// all within 5 % of the ceiling.
	if float64(slices.Min(cut)) < 0.95*float64(ceiling) || math.IsNaN(r) {
		return 0
	}
	return ceiling
}
