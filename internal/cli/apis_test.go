package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunEveryAPIOnTheSimulator runs each OpenAI-style API, and --stream=false, against the
// built-in simulator (no --url) and checks what summary.json says of it: a level without
// streams has E2EL and no TTFT, TPOT, ITL or chunk gap (absent, not zero), embeddings and
// rerank levels their inputs and documents per second.
func TestRunEveryAPIOnTheSimulator(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		streamed bool
		perS     string // inputs_per_s or documents_per_s
		inputs   int    // total input tokens of the level
	}{
		{"responses", []string{"--api", "openai-responses"}, true, "", 8 * 64},
		{"responses --stream=false", []string{"--api", "openai-responses", "--stream=false"}, false, "", 8 * 64},
		{"chat --stream=false", []string{"--api", "openai-chat", "--stream=false"}, false, "", 8 * 64},
		{"completions --stream=false", []string{"--api", "openai-completions", "--stream=false"}, false, "", 8 * 64},
		{"embeddings", []string{"--api", "openai-embeddings", "--batch-size", "4"}, false, "inputs_per_s", 8 * 4 * 64},
		{"rerank", []string{"--api", "rerank", "--documents", "3", "--query-tokens", "16"}, false, "documents_per_s", 8 * (16 + 3*64)},
		{"rerank at /rerank", []string{"--api", "rerank", "--endpoint", "/rerank"}, false, "documents_per_s", 8 * (32 + 8*64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "--sim", "textbook", "--concurrency", "2", "--requests", "8", "--input-tokens", "64",
				"--output-tokens", "8", "--no-progress", "--metrics-url", "none", "--output-dir", dir}, tc.args...)
			code, stdout, stderr := runCLI(t, context.Background(), args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Levels []struct {
					Completed, Failed int
					Metrics           map[string]json.RawMessage
				}
			}
			var raw struct {
				Levels []map[string]json.RawMessage `json:"levels"`
			}
			if err := json.Unmarshal(b, &s); err != nil || json.Unmarshal(b, &raw) != nil {
				t.Fatal(err)
			}
			lv, rl := s.Levels[0], raw.Levels[0]
			var tin int
			_ = json.Unmarshal(rl["total_input_tokens"], &tin)
			if lv.Completed != 8 || lv.Failed != 0 || tin != tc.inputs {
				t.Errorf("completed %d, failed %d, input tokens %d (want 8, 0, %d)", lv.Completed, lv.Failed, tin, tc.inputs)
			}
			for _, k := range []string{"ttft_ms", "tpot_ms", "itl_ms", "chunk_gap_ms", "ttft_from_schedule_ms"} {
				if _, ok := lv.Metrics[k]; ok != tc.streamed {
					t.Errorf("metrics.%s present %v, want %v", k, ok, tc.streamed)
				}
			}
			for _, k := range []string{"e2el_ms", "e2el_from_schedule_ms"} {
				if _, ok := lv.Metrics[k]; !ok {
					t.Errorf("metrics.%s missing", k)
				}
			}
			for _, k := range []string{"inputs_per_s", "documents_per_s"} {
				if _, ok := rl[k]; ok != (k == tc.perS) {
					t.Errorf("%s present %v", k, ok)
				}
			}
			if _, ok := rl["input_throughput"]; !ok {
				t.Error("input_throughput missing")
			}
			if says := strings.Contains(stdout, "TTFT, TPOT, ITL and chunk gap"); says == tc.streamed {
				t.Errorf("the console says the stream metrics are not measured: %v\n%s", says, stdout)
			}
		})
	}
}

// TestAPIUsageErrors: the new flags where they do not apply are usage errors.
func TestAPIUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", "rerank", "--stream=false"}, "never streams"},
		{[]string{"--api", "openai-chat", "--batch-size", "4"}, "--batch-size is for the embeddings APIs"},
		{[]string{"--api", "ollama-embed"}, "needs --url"},
		{[]string{"--api", "rerank", "--documents", "0"}, "at least 1"},
		{[]string{"--api", "openai-completions", "--images", "1"}, "--images is for openai-chat and openai-responses"},
		{[]string{"--images", "1", "--image-size", "12"}, "--image-size"},
		{[]string{"--images", "1", "--image-format", "gif"}, "png or jpeg"},
		{[]string{"--api", "rerank", "--endpoint", "rerank", "--url", "http://127.0.0.1:1"}, "must be a path starting with /"},
	} {
		code, _, stderr := runCLI(t, context.Background(), append([]string{"run", "--requests", "1", "--concurrency", "1"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSimulateAPIs: simulate gives embeddings, rerank and --stream=false levels the shape
// run gives them (inputs and documents per second, no stream metrics).
func TestSimulateAPIs(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		perS   string
		stream bool
	}{
		{[]string{"--api", "openai-embeddings", "--batch-size", "8"}, "inputs_per_s", false},
		{[]string{"--api", "rerank", "--documents", "4"}, "documents_per_s", false},
		{[]string{"--api", "openai-chat", "--stream=false"}, "", false},
		{[]string{"--api", "openai-responses"}, "", true},
	} {
		dir := t.TempDir()
		args := append([]string{"simulate", "--sim", "textbook", "--concurrency", "4", "--requests", "40", "--input-tokens", "128",
			"--output-tokens", "16", "--no-progress", "--output-dir", dir}, tc.args...)
		if code, _, stderr := runCLI(t, context.Background(), args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		s := readSummaryT(t, dir)
		l := s.Levels[0]
		if l.Completed != 40 || l.Metrics.Has("ttft") != tc.stream || !l.Metrics.Has("e2el") ||
			(l.InputsPerS != nil) != (tc.perS == "inputs_per_s") || (l.DocumentsPerS != nil) != (tc.perS == "documents_per_s") {
			t.Errorf("%v: completed %d, ttft %v, inputs/s %v, documents/s %v", tc.args, l.Completed, l.Metrics.Has("ttft"), l.InputsPerS, l.DocumentsPerS)
		}
		if !tc.stream && tc.perS == "" && l.TotalOutputTokens != 40*16 {
			t.Errorf("%v: %d output tokens, want %d", tc.args, l.TotalOutputTokens, 40*16)
		}
	}
	if code, _, stderr := runCLI(t, context.Background(), "simulate", "--api", "ollama-embed"); code != ExitUsage || !strings.Contains(stderr, "simulate speaks") {
		t.Errorf("simulate --api ollama-embed: exit %d, %s", code, stderr)
	}
}

// TestRunWithImages: --images adds synthetic images to chat and Responses prompts; the
// simulator charges them by its patch rule, so the server's prompt tokens exceed the
// intended (text-only) ones by exactly that, and the records count the images and bytes.
func TestRunWithImages(t *testing.T) {
	for _, api := range []string{"openai-chat", "openai-responses"} {
		dir := t.TempDir()
		code, stdout, stderr := runCLI(t, context.Background(), "run", "--sim", "textbook", "--api", api, "--images", "2", "--image-size", "448x224",
			"--concurrency", "2", "--requests", "4", "--input-tokens", "32", "--output-tokens", "4", "--no-progress", "--metrics-url", "none", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", api, code, stderr)
		}
		s := readSummaryT(t, dir)
		p := s.Levels[0].PromptTokens
		// 448 x 224 px: 32 x 16 patches of 14 px, merged 2 x 2: 128 tokens an image.
		if p == nil || p.IntendedMean != 32 || p.ServerMean != 32+2*128 || p.ImagesMean != 2 {
			t.Errorf("%s: prompt tokens %+v, want intended 32, server 288, 2 images", api, p)
		}
		if !strings.Contains(stdout, "includes 2.0 images per request") {
			t.Errorf("%s: the console does not say the images count:\n%s", api, stdout)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "records.jsonl"))
		if !strings.Contains(string(b), `"images":2,"image_bytes":`) {
			t.Errorf("%s: records without images: %.300s", api, b)
		}
	}
}
