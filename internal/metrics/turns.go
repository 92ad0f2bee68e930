package metrics

import "github.com/llmbench/llmbench/internal/record"

// TurnStats are the figures of one turn of a multi-turn level's conversations, over its
// measured requests. A later turn carries the conversation's history, so its TTFT shows
// what a server's prefix cache saves.
type TurnStats struct {
	Turn      int   `json:"turn"` // 1-based: 1 is each conversation's first request
	Completed int   `json:"completed"`
	Failed    int   `json:"failed"` // errors other than canceled (a failure ends its conversation)
	TTFT      Stats `json:"ttft_ms"`
	E2EL      Stats `json:"e2el_ms"`
	// InputTokensMean is the mean intended prompt length of the completed requests,
	// history included; null when none completed.
	InputTokensMean *float64 `json:"input_tokens_mean"`
}

// byTurn computes the per-turn figures of the measured records that carry a turn (the
// same requests Aggregate measures); nil when none does.
func byTurn(recs []record.Record, ps []float64) []TurnStats {
	type acc struct {
		completed, failed int
		input             int64
		ttft, e2el        *Dist
	}
	var turns []acc
	for i := range recs {
		r := &recs[i]
		if r.Warmup || r.Turn <= 0 {
			continue
		}
		for len(turns) < r.Turn {
			turns = append(turns, acc{ttft: NewDist(), e2el: NewDist()})
		}
		a := &turns[r.Turn-1]
		if r.Error != nil {
			if r.Error.Kind != record.KindCanceled {
				a.failed++
			}
			continue
		}
		a.completed++
		a.input += int64(r.InputTokens)
		if ft, ok := r.FirstToken(); ok {
			lt, _ := r.LastToken()
			a.ttft.AddMicros(us(ft) - us(r.Sent))
			a.e2el.AddMicros(us(lt) - us(r.Sent))
		}
	}
	if turns == nil {
		return nil
	}
	out := make([]TurnStats, len(turns))
	for k, a := range turns {
		out[k] = TurnStats{Turn: k + 1, Completed: a.completed, Failed: a.failed,
			TTFT: StatsOf(a.ttft, ps), E2EL: StatsOf(a.e2el, ps)}
		if a.completed > 0 {
			m := float64(a.input) / float64(a.completed)
			out[k].InputTokensMean = &m
		}
	}
	return out
}
