package e2e

import (
	"encoding/json"
	"math"
	"testing"
)

// These run without a server: the helpers the Ollama tests rely on.

func TestNormalizeOllamaHost(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:11435":         "http://127.0.0.1:11435",
		"http://127.0.0.1:11435":  "http://127.0.0.1:11435",
		"0.0.0.0:8080":            "http://127.0.0.1:8080",
		":9000":                   "http://127.0.0.1:9000",
		"localhost":               "http://localhost:11434",
		"https://ollama.example/": "https://ollama.example:11434",
		"[::1]:5000":              "http://[::1]:5000",
	} {
		got, err := normalizeOllamaHost(in)
		if err != nil || got != want {
			t.Errorf("normalizeOllamaHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestServerTPOT(t *testing.T) {
	for _, c := range []struct {
		rec  string
		want float64 // seconds; NaN: none found
	}{
		{`{"server_timings":{"eval_count":24,"eval_duration_s":0.048}}`, 0.002},
		{`{"server":{"decode_tokens":10,"decode_ms":50}}`, 0.005},
		{`{"server_timings":{"tpot_ms":3}}`, 0.003},
		{`{"server_timings":{"eval_count":0,"eval_duration_s":1}}`, math.NaN()},
		{`{"server_timings":null}`, math.NaN()},
		{`{"output_tokens":24}`, math.NaN()},
	} {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.rec), &raw); err != nil {
			t.Fatal(err)
		}
		got, ok := serverTPOT(raw)
		if ok != !math.IsNaN(c.want) || (ok && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("serverTPOT(%s) = %v, %v; want %v", c.rec, got, ok, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("odd median %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("even median %v", m)
	}
	if m := median(nil); !math.IsNaN(m) {
		t.Errorf("empty median %v", m)
	}
}
