package metrics

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/record"
)

func TestAggregateByTurn(t *testing.T) {
	turn := func(r record.Record, conv, k, input int) record.Record {
		r.Conversation, r.Turn, r.InputTokens = conv, k, input
		return r
	}
	failed := turn(rec(400*ms, 400*ms, 450*ms, 0), 1, 2, 330)
	failed.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 500}
	canceled := turn(rec(500*ms, 500*ms, 520*ms, 0), 0, 3, 500)
	canceled.Error = &record.Error{Kind: record.KindCanceled}
	warm := turn(rec(0, 0, 900*ms, 1, ev{800 * ms, 1}), 2, 1, 100)
	warm.Warmup = true
	recs := []record.Record{
		// Turn 1: TTFT 50 and 60, E2EL 90 and 90; input 100 and 120.
		turn(rec(0, 0, 95*ms, 3, ev{50 * ms, 1}, ev{90 * ms, 2}), 0, 1, 100),
		turn(rec(10*ms, 10*ms, 100*ms, 2, ev{70 * ms, 1}, ev{100 * ms, 1}), 1, 1, 120),
		// Turn 2: TTFT 20, E2EL 100, input 300; one failure.
		turn(rec(200*ms, 200*ms, 300*ms, 2, ev{220 * ms, 1}, ev{300 * ms, 1}), 0, 2, 300),
		failed,
		// Turn 3: canceled only (neither completed nor failed). Warm-up: ignored.
		canceled, warm,
	}
	lv := Aggregate(recs, Config{Percentiles: []float64{50}})
	if len(lv.Turns) != 3 {
		t.Fatalf("%d turns, want 3", len(lv.Turns))
	}
	t1, t2, t3 := lv.Turns[0], lv.Turns[1], lv.Turns[2]
	if t1.Turn != 1 || t1.Completed != 2 || t1.Failed != 0 || t2.Turn != 2 || t2.Completed != 1 || t2.Failed != 1 || t3.Completed != 0 || t3.Failed != 0 {
		t.Errorf("counts: %+v %+v %+v", t1, t2, t3)
	}
	near(t, "turn 1 TTFT mean", t1.TTFT.Mean, 55)
	near(t, "turn 1 E2EL mean", t1.E2EL.Mean, 90)
	near(t, "turn 1 input mean", *t1.InputTokensMean, 110)
	near(t, "turn 2 TTFT p50", t2.TTFT.Percentiles[0].Value, 20)
	near(t, "turn 2 E2EL max", t2.E2EL.Max, 100)
	near(t, "turn 2 input mean", *t2.InputTokensMean, 300)
	if t3.TTFT.Count != 0 || t3.InputTokensMean != nil {
		t.Errorf("turn 3 has no completed request: %+v", t3)
	}
	// The level's own figures are those of the same records without turns.
	plain := Aggregate(stripTurns(recs), Config{Percentiles: []float64{50}})
	if plain.Turns != nil || plain.Completed != lv.Completed || plain.Metrics.Stat("ttft").Mean != lv.Metrics.Stat("ttft").Mean {
		t.Errorf("turns changed the level's figures: %+v vs %+v", plain.Metrics.Stat("ttft"), lv.Metrics.Stat("ttft"))
	}
	b, err := json.Marshal(lv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"turns":[{"turn":1,"completed":2,"failed":0,"ttft_ms":{"count":2,"mean":55,`) ||
		!strings.Contains(string(b), `"input_tokens_mean":null}]`) {
		t.Errorf("json: %s", b)
	}
	var back Level
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Turns) != 3 || back.Turns[1].TTFT.Mean != 20 || *back.Turns[0].InputTokensMean != 110 {
		t.Errorf("round trip: %+v", back.Turns)
	}
	// A single-turn level's summary has no "turns" key at all.
	if b, _ := json.Marshal(plain); strings.Contains(string(b), `"turns"`) {
		t.Errorf("single-turn level writes turns: %s", b)
	}
}

func stripTurns(recs []record.Record) []record.Record {
	out := make([]record.Record, len(recs))
	for i, r := range recs {
		r.Conversation, r.Turn = 0, 0
		out[i] = r
	}
	return out
}
