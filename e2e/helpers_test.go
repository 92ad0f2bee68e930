package e2e

import (
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
