package validate

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/predict"
)

// Residuals are the simulated rows' figures, predicted and measured, that predict's bands
// are read from (predict.Figures; skipped rows have none).
func Residuals(results []Result) []predict.Residual {
	var out []predict.Residual
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		for _, f := range predict.Figures {
			p, okP := r.Predicted[f]
			m, okM := r.Measured[f]
			if okP && okM {
				out = append(out, predict.Residual{Group: r.Group, Source: r.Source.Name, Figure: f, Predicted: p, Actual: m})
			}
		}
	}
	return out
}

// Generation is a GPU's generation, for leaving one out: hopper, blackwell, ampere, ada,
// and AMD's cdna3 and cdna4; the name itself for one not listed.
func Generation(gpu string) string {
	switch gpu {
	case "h100", "h200", "h200-nvl", "h20", "gh200":
		return "hopper"
	case "b200", "b300", "gb200", "gb300", "rtx-pro-6000":
		return "blackwell"
	case "mi300x", "mi325x":
		return "cdna3"
	case "mi350x", "mi355x":
		return "cdna4"
	case "a100", "a10", "a10g":
		return "ampere"
	case "l40s", "l4", "rtx4090":
		return "ada"
	}
	return gpu
}

// amd says whether a GPU preset is AMD's (an Instinct of a CDNA generation).
func amd(gpu string) bool { return strings.HasPrefix(Generation(gpu), "cdna") }

// SetIntervals gives each simulated row the interval of its prediction from the rows of
// the other sources (so a row's interval never rests on itself or its own source's bias).
func SetIntervals(results []Result) {
	rs := Residuals(results)
	bySource := map[string]predict.Table{}
	for i := range results {
		r := &results[i]
		if r.Skipped != "" || len(r.Predicted) == 0 {
			continue
		}
		t, ok := bySource[r.Source.Name]
		if !ok {
			var rest []predict.Residual
			for _, x := range rs {
				if x.Source != r.Source.Name {
					rest = append(rest, x)
				}
			}
			t = predict.NewTable(rest, "")
			bySource[r.Source.Name] = t
		}
		bands := t.For(r.Group.Family, r.Group.GPU, r.Group.Engine).ByLoad[r.Group.Load]
		for _, f := range predict.Figures {
			if b, ok := bands[f]; ok {
				if p, ok := r.Predicted[f]; ok {
					if r.Interval == nil {
						r.Interval = map[string][2]float64{}
					}
					r.Interval[f] = [2]float64{b.Lo * p, b.Hi * p}
				}
			}
		}
	}
}

// WriteCoverage prints how often the 90 % intervals held the measured figure when each
// source, then each GPU generation, was left out of the residuals in turn.
func WriteCoverage(w io.Writer, results []Result) {
	rs := Residuals(results)
	for _, by := range []struct {
		name  string
		split func(predict.Residual) string
	}{
		{"source", func(r predict.Residual) string { return r.Source }},
		{"GPU generation", func(r predict.Residual) string { return Generation(r.Group.GPU) }},
		{"group (model × GPU × engine × load)", func(r predict.Residual) string { return fmt.Sprint(r.Group) }},
	} {
		held, total := predict.Coverage(rs, by.split)
		keys := make([]string, 0, len(total))
		h, n := 0, 0
		for k := range total {
			keys = append(keys, k)
			h += held[k]
			n += total[k]
		}
		sort.Strings(keys)
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "90%% intervals, each %s left out in turn: %d of %d figures held (%.0f %%)", by.name, h, n, 100*float64(h)/float64(n))
		if len(keys) <= 4 {
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %d/%d", k, held[k], total[k]))
			}
			fmt.Fprintf(w, ": %s", joinSorted(parts))
		}
		fmt.Fprintln(w)
	}
}

func joinSorted(parts []string) string {
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// WriteSpreads writes the prediction bands of rep's groups to path, as
// internal/predict/spreads.json holds them; made says how they were made.
func WriteSpreads(path string, rep *Report, made string) error {
	return atomicfile.WriteJSON(path, predict.NewTable(Residuals(rep.Rows), made))
}
