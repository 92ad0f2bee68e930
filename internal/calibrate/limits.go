package calibrate

import "math"

// truncated finds a server that cuts prompts longer than its context rather than refusing
// them (Ollama past num_ctx): at concurrency 1, the longest prompts the server counted all
// at one ceiling, where its count of the others (a line through the client's count: the
// tokenizers' ratio and the chat template's fixed tokens) predicts them longer by more than
// truncationSlack. It returns that ceiling, the context prompts are cut to; 0 when no
// prompt was cut (or the server gave no counts of its own).
func truncated(pts []Point) int {
	type obs struct{ server, intended float64 }
	var all []obs
	for i := range pts {
		pt := &pts[i]
		if pt.Open || pt.Concurrency != 1 || pt.mixed() {
			continue
		}
		for _, q := range pt.Requests {
			if q.Intended > 0 && q.Prompt > 0 && !q.Warmup {
				all = append(all, obs{float64(q.Prompt), float64(q.Intended)})
			}
		}
	}
	ceiling := 0.0
	for _, o := range all {
		ceiling = math.Max(ceiling, o.server)
	}
	var xs, ys []float64
	for _, o := range all {
		if o.server < ceilingBand*ceiling {
			xs, ys = append(xs, o.intended), append(ys, o.server)
		}
	}
	a, b, ok := line(xs, ys)
	if !ok || b <= 0 {
		return 0
	}
	for _, o := range all {
		if o.server >= ceilingBand*ceiling && a+b*o.intended > (1+truncationSlack)*ceiling {
			return int(ceiling)
		}
	}
	return 0
}

// A count within ceilingBand of the longest is at the ceiling (the server keeps some of its
// template's tokens); a prompt predicted truncationSlack longer than the ceiling was cut
// (tokenizers' counts of one text vary by a few percent about their ratio).
const (
	ceilingBand     = 0.95
	truncationSlack = 0.1
)
