package workload

import (
	"strings"
	"testing"
	"time"
)

// --trace-offset starts the replay at a time of the trace's own, before --trace-speed:
// earlier rows are dropped and the rest keep their gaps from the new start.
func TestTraceOffset(t *testing.T) {
	path := writeFile(t, "m.jsonl", `{"timestamp": 1000, "input_length": 35, "output_length": 3, "hash_ids": [1]}
{"timestamp": 3000, "input_length": 20, "output_length": 4, "hash_ids": [2]}
{"timestamp": 4000, "input_length": 40, "output_length": 7, "hash_ids": [3]}
{"timestamp": 9000, "input_length": 60, "output_length": 9, "hash_ids": [4]}
`)
	src, err := New(Config{Dataset: "mooncake:" + path, BlockTokens: 16, TraceSpeed: 2, TraceOffset: 2 * time.Second, LengthsOnly: true}, byteTok{})
	if err != nil {
		t.Fatal(err)
	}
	if src.Len() != 3 {
		t.Fatalf("%d rows after the offset, want 3", src.Len())
	}
	// Trace times (from its first request) 2 s, 3 s, 8 s, less the 2 s offset, halved by
	// the speed.
	for i, want := range []time.Duration{0, 500 * time.Millisecond, 3 * time.Second} {
		if r := src.Request(0, i); r.Arrival != want {
			t.Errorf("request %d due %v, want %v", i, r.Arrival, want)
		}
	}
	if _, err := New(Config{Dataset: "mooncake:" + path, TraceOffset: 9 * time.Second, LengthsOnly: true}, byteTok{}); err == nil || !strings.Contains(err.Error(), "past the trace's last request (at 8s") {
		t.Errorf("offset past the end: %v", err)
	}
	if err := (Config{TraceOffset: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "trace offset") {
		t.Errorf("negative offset: %v", err)
	}
	if err := (Config{Dataset: "random", InputTokens: Fixed(8), OutputTokens: Fixed(8), TraceOffset: time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "applies to a trace with timestamps") {
		t.Errorf("random with an offset: %v", err)
	}
}
