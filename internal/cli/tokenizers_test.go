package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

const llama2File = "../tokenizer/testdata/llama2/tokenizer.json.gz"

// An unknown --tokenizer lists what is valid, where it looked, and the nearest name.
func TestTokenizerUnknownName(t *testing.T) {
	t.Setenv("HF_HOME", t.TempDir())
	want := `--tokenizer: unknown tokenizer "o200k": an encoding (o200k_base, cl100k_base), a tokenizer.json path, a folder holding one, or a HuggingFace model id in the local cache (looked in `
	t.Chdir(t.TempDir()) // nothing is written, but were a run to start, not into the tree
	for _, args := range [][]string{{"run"}, {"simulate"}, {"dataset", "--output", "w.jsonl"}, {"tokenize"}} {
		cmd := args[0]
		code, _, stderr := runCLI(t, t.Context(), append(args, "--tokenizer", "o200k")...)
		if code != ExitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "did you mean o200k_base?") || strings.Count(stderr, "unknown tokenizer") != 1 {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and %q", cmd, code, stderr, ExitUsage, want)
		}
	}
}

// llmbench serve --tokenizer answers /tokenize, so --tokenizer server works against it; and
// a HuggingFace model id from the local cache gives the same exact prompts. Both under a
// SentencePiece vocabulary (Llama 2): the server's prompt_tokens equal --input-tokens.
func TestTokenizerServerAndModelID(t *testing.T) {
	data, err := os.ReadFile(llama2File)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	snap := filepath.Join(home, "hub", "models--meta-llama--Llama-2-7b-hf", "snapshots", "0123abc")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "tokenizer.json"), data, 0o644); err != nil { // gzipped: Load reads it as is
		t.Fatal(err)
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")

	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	opts := server.ProfileOptions(p, 1)
	if opts.Tokenizer, err = tokenizer.Load("meta-llama/Llama-2-7b-hf"); err != nil {
		t.Fatal(err)
	}
	h, err := server.New(startEngine(t, p), opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, spec := range []string{"server", "meta-llama/Llama-2-7b-hf"} {
		dir := t.TempDir()
		code, _, stderr := runCLI(t, t.Context(), "run", "--url", ts.URL, "--tokenizer", spec, "--concurrency", "2", "--requests", "6",
			"--input-tokens", "50", "--output-tokens", "2", "--no-progress", "--metrics-url", "none", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("--tokenizer %s: exit %d:\n%s", spec, code, stderr)
		}
		for _, r := range readRecords(t, dir) {
			if r.Error != nil || r.ServerPromptTokens != 50 {
				t.Errorf("--tokenizer %s request %d: error %+v, server counted %d prompt tokens, want 50", spec, r.Index, r.Error, r.ServerPromptTokens)
			}
		}
	}
}

// A server without /tokenize (Ollama, a plain file server): one message that says which
// servers have one and what to give instead; not a usage error.
func TestTokenizerServerWithoutTokenize(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			io.WriteString(w, "nope")
		}))
		code, _, stderr := runCLI(t, t.Context(), "run", "--url", ts.URL, "--tokenizer", "server", "--requests", "1",
			"--no-progress", "--metrics-url", "none", "--output-dir", t.TempDir())
		ts.Close()
		want := "this server has no /tokenize (vLLM, llama.cpp's server and llmbench serve have one; Ollama has none): give --tokenizer the model's HuggingFace id"
		if code != ExitFailure || !strings.Contains(stderr, want) || strings.Count(stderr, "/tokenize:") != 1 || strings.Contains(stderr, "--help") {
			t.Errorf("HTTP %d: exit %d, stderr:\n%s", status, code, stderr)
		}
	}
}

func startEngine(t *testing.T, p sim.Profile) *sim.Engine {
	eng := sim.NewEngine(p)
	go eng.Start(t.Context())
	return eng
}
