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

// turnsAcc accumulates the per-turn figures of the measured records that carry a turn
// (the same requests the level measures).
type turnsAcc []turnAcc

type turnAcc struct {
	completed, failed int
	input             int64
	ttft, e2el        *Dist
}

func (t *turnsAcc) add(r *record.Record) {
	if r.Turn <= 0 {
		return
	}
	for len(*t) < r.Turn {
		*t = append(*t, turnAcc{ttft: NewDist(), e2el: NewDist()})
	}
	a := &(*t)[r.Turn-1]
	if r.Error != nil {
		if r.Error.Kind != record.KindCanceled {
			a.failed++
		}
		return
	}
	a.completed++
	a.input += int64(r.InputTokens)
	add := func(d *Dist) func(num, den int64, w uint64) {
		return func(num, den int64, w uint64) { d.AddRatio(num, den, w) }
	}
	registryIndex[KeyTTFT].Samples(r, add(a.ttft))
	registryIndex[KeyE2EL].Samples(r, add(a.e2el))
}

// result is nil when no record carried a turn.
func (t turnsAcc) result(ps []float64) []TurnStats {
	if t == nil {
		return nil
	}
	out := make([]TurnStats, len(t))
	for k, a := range t {
		out[k] = TurnStats{Turn: k + 1, Completed: a.completed, Failed: a.failed,
			TTFT: StatsOf(a.ttft, ps), E2EL: StatsOf(a.e2el, ps)}
		if a.completed > 0 {
			m := float64(a.input) / float64(a.completed)
			out[k].InputTokensMean = &m
		}
	}
	return out
}
