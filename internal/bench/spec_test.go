package bench

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// Descriptions written by llmbench before they were typed (summary.json v1), from
//
//	run --rate 20 --arrival gamma:0.5 --max-concurrency 4 --requests 6 --warmup 2 --header ... --extra-body ...
//	    --shard 0/2 --read-stamps --keep-alive=false --start-at 2026-12-01T09:00:00Z   (in-process simulator)
//	simulate --concurrency 2 --duration 2s --warmup 1s --cooldown 500ms --turns 2 --think-time 100ms
//	simulate --sim textbook --search rate --search-max 8 --prefix-tokens 64 --prefix-groups 3 --requests 20
//
// except that headers are now sorted by name (they came in map order).
var v1 = []struct {
	name     string
	run      Spec
	workload string
	load     string
}{
	{name: "run", run: Spec{Live: true, InProcess: true, Levels: []load.Level{{Rate: 20, Requests: 6}},
		Base: load.Level{Arrival: schedule.Arrival{Kind: "gamma", Burstiness: 0.5}, MaxConcurrency: 4, Warmup: 2,
			Shard: 0, Shards: 2}, Requests: 6, StartAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600)),
		SimProfile: "h200-llama-3.1-8b", Server: Server{Timeout: 10 * time.Minute, IdleTimeout: time.Minute, IgnoreEOS: true,
			ReadStamps: true, TestRequest: true, Headers: http.Header{"X-Team": {"a"}, "Authorization": {"Bearer sk-x"}, "X-Api-Key": {"s"}},
			ExtraBody: map[string]any{"temperature": 0.5, "top_k": 3.0}},
		Workload: workload.Config{InputTokens: mustDist("512"), OutputTokens: mustDist("128"), TraceSpeed: 1}, Tokenizer: "o200k_base"},
		workload: `{"dataset": "random", "tokenizer": "o200k_base", "input_tokens": "512", "output_tokens": "128", "trace_speed": 1}`,
		load: `{"mode": "run", "levels": [{"rate": 20, "requests": 6}], "arrival": "gamma:0.5", "max_concurrency": 4, "requests": 6,
			"warmup": 2, "shard": "0/2", "start_at": "2026-12-01T09:00:00Z", "sim_profile": "h200-llama-3.1-8b", "timeout": "10m0s",
			"idle_timeout": "1m0s", "ignore_eos": true, "read_stamps": true, "keep_alive": false, "test_request": true,
			"headers": ["Authorization: REDACTED", "X-Api-Key: REDACTED", "X-Team: a"], "extra_body": {"temperature": 0.5, "top_k": 3}}`},
	{name: "simulate turns", run: Spec{Levels: []load.Level{{Concurrency: 2}},
		Base:       load.Level{Duration: 2 * time.Second, WarmupTime: time.Second, Cooldown: 500 * time.Millisecond},
		SimProfile: "h200-llama-3.1-8b", Server: Server{Timeout: time.Minute, Headers: http.Header{"X-Team": {"a"}}},
		Workload: workload.Config{InputTokens: mustDist("512"), OutputTokens: mustDist("128"), TraceSpeed: 1, Turns: 2,
			ThinkTime: 100 * time.Millisecond, PrefixGroups: 1}, Tokenizer: "o200k_base"},
		workload: `{"dataset": "random", "tokenizer": "o200k_base", "input_tokens": "512", "output_tokens": "128", "trace_speed": 1, "turns": 2, "think_time": "100ms"}`,
		load: `{"mode": "simulate", "levels": [{"concurrency": 2}], "duration": "2s", "warmup_time": "1s", "cooldown": "500ms",
			"sim_profile": "h200-llama-3.1-8b", "ignore_eos": false}`},
	{name: "simulate search", run: Spec{Search: "rate", SearchMax: 8, Requests: 20, SimProfile: "textbook",
		Workload: workload.Config{Dataset: "random", InputTokens: mustDist("512"), OutputTokens: mustDist("128"), TraceSpeed: 1,
			PrefixTokens: 64, PrefixGroups: 3, Turns: 1, ThinkTime: time.Second}, Tokenizer: "o200k_base"},
		workload: `{"dataset": "random", "tokenizer": "o200k_base", "input_tokens": "512", "output_tokens": "128", "prefix_tokens": 64, "prefix_groups": 3, "trace_speed": 1}`,
		load:     `{"mode": "simulate", "levels": null, "search": "rate", "search_max": 8, "arrival": "poisson", "requests": 20, "sim_profile": "textbook", "ignore_eos": false}`},
}

func mustDist(s string) workload.Dist {
	d, err := workload.ParseDist(s)
	if err != nil {
		panic(err)
	}
	return d
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Describe writes what llmbench wrote before the description was typed: the same keys, in
// the same order, with the same settings left out.
func TestDescribeAsBefore(t *testing.T) {
	for _, c := range v1 {
		load, wl := c.run.Describe()
		gotL, _ := json.Marshal(load)
		gotW, _ := json.Marshal(wl)
		if want := compact(t, c.load); string(gotL) != want {
			t.Errorf("%s: load\n got %s\nwant %s", c.name, gotL, want)
		}
		if want := compact(t, c.workload); string(gotW) != want {
			t.Errorf("%s: workload\n got %s\nwant %s", c.name, gotW, want)
		}
	}
}

// What was written reads back typed and writes again byte for byte.
func TestDescriptionRoundTrip(t *testing.T) {
	for _, c := range v1 {
		var l rundesc.Load
		var w rundesc.Workload
		if err := json.Unmarshal([]byte(c.load), &l); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(c.workload), &w); err != nil {
			t.Fatal(err)
		}
		gotL, _ := json.Marshal(l)
		gotW, _ := json.Marshal(w)
		if string(gotL) != compact(t, c.load) || string(gotW) != compact(t, c.workload) {
			t.Errorf("%s: round trip\n%s\n%s", c.name, gotL, gotW)
		}
	}
	var l rundesc.Load
	json.Unmarshal([]byte(v1[0].load), &l)
	if l.Mode != rundesc.ModeRun || l.KeepAlive == nil || *l.KeepAlive || l.Levels[0].Name() != "rate 20/s" {
		t.Errorf("read back %+v", l)
	}
}

// A trace given no load replaces the default ladder with one level of its own arrivals; a
// dataset is reused by levels longer than it and sampled by shorter ones, a search's aside.
func TestFitToSource(t *testing.T) {
	ladder := []load.Level{{Index: 0, Concurrency: 1, Requests: 10}, {Index: 1, Concurrency: 8, Requests: 400, Warmup: 8}}
	s := Spec{Levels: ladder, DefaultLoad: true, Seed: 7}
	fit := s.FitToSource(workload.Info{Dataset: "sharegpt:x", Rows: 100})
	if fit.Reused != 408 || len(fit.Sampled) != 1 || fit.Sampled[0] != (LevelCount{0, 10}) || fit.Replayed || len(s.Levels) != 2 {
		t.Errorf("dataset of 100 rows: %+v, levels %+v", fit, s.Levels)
	}
	s.Search = "concurrency"
	if fit := s.FitToSource(workload.Info{Rows: 100}); len(fit.Sampled) != 0 {
		t.Errorf("a search's levels said sampled: %+v", fit.Sampled)
	}
	s = Spec{Levels: ladder, DefaultLoad: true, Seed: 7}
	fit = s.FitToSource(workload.Info{Rows: 60, Trace: true, Span: 30 * time.Second})
	if !fit.Replayed || fit.Reused != 0 || len(s.Levels) != 1 || s.Levels[0].Rate != 2 || s.Levels[0].Requests != 60 || s.Levels[0].Seed != 7 {
		t.Errorf("trace of 60 arrivals over 30 s: %+v, levels %+v", fit, s.Levels)
	}
	s = Spec{Levels: ladder, Seed: 7}
	if fit := s.FitToSource(workload.Info{Rows: 60, Trace: true, Span: 30 * time.Second}); fit.Replayed || len(s.Levels) != 2 {
		t.Errorf("a trace with a load given replaced it: %+v, levels %+v", fit, s.Levels)
	}
}
