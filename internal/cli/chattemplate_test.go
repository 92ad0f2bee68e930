package cli

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/specflags"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// llama3Dir holds the Llama 3 tokenizer and its tokenizer_config.json (the chat template).
const llama3Dir = "../tokenizer/testdata/llama3"

// TestChatTemplateExactPromptTokens: with a tokenizer whose folder (or HuggingFace cache
// snapshot) holds the model's chat template, chat prompts are sized so that a server that
// applies the template (as vLLM does; here llmbench's own, in-process and served) counts
// exactly --input-tokens: one message and multi-turn, and completions (no template) too.
func TestChatTemplateExactPromptTokens(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"chat", []string{"--api", "openai-chat"}},
		{"turns", []string{"--api", "openai-chat", "--turns", "3"}},
		{"responses", []string{"--api", "openai-responses"}},
		{"completions", []string{"--api", "openai-completions"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "--tokenizer", llama3Dir, "--concurrency", "3", "--requests", "9",
				"--input-tokens", "uniform:40:200", "--output-tokens", "3", "--no-progress", "--output-dir", dir}, c.args...)
			code, _, stderr := runCLI(t, t.Context(), args...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			for _, r := range readRecords(t, dir) {
				if r.Error != nil || r.InputTokens < 40 || r.ServerPromptTokens != r.InputTokens {
					t.Errorf("request %d: error %+v, input_tokens %d, server counted %d", r.Index, r.Error, r.InputTokens, r.ServerPromptTokens)
				}
			}
			got := readSummaryT(t, dir).Workload.ChatTemplate
			if want := c.name != "completions"; want != strings.HasSuffix(got, "tokenizer_config.json") {
				t.Errorf("summary.json workload.chat_template = %q", got)
			}
		})
	}
}

// TestChatTemplateFromHFCache: a model id from the local HuggingFace cache brings its
// snapshot's chat template; `serve --tokenizer` with the same id formats chat as vLLM
// does; --chat-template none counts message text alone (and then differs); --tokenizer
// server has the server format and count them (its /tokenize with messages).
func TestChatTemplateFromHFCache(t *testing.T) {
	home := t.TempDir()
	snap := filepath.Join(home, "hub", "models--meta-llama--Meta-Llama-3-8B-Instruct", "snapshots", "0123abc")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]string{{"tokenizer.json.gz", "tokenizer.json"}, {"tokenizer_config.json", "tokenizer_config.json"}} {
		data, err := os.ReadFile(filepath.Join(llama3Dir, f[0]))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, f[1]), data, 0o644); err != nil { // gzipped: Load reads it as is
			t.Fatal(err)
		}
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	const id = "meta-llama/Meta-Llama-3-8B-Instruct"

	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	opts := server.ProfileOptions(p, 1)
	if opts.Tokenizer, err = tokenizer.Load(id); err != nil {
		t.Fatal(err)
	}
	if opts.ChatTemplate, err = specflags.ChatTemplate("", id, "openai-chat"); err != nil || opts.ChatTemplate == nil {
		t.Fatalf("serve's template: %v, %v", opts.ChatTemplate, err)
	}
	h, err := server.New(startEngine(t, p), opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, c := range []struct {
		tokenizer, template string
		exact               bool
	}{{id, "", true}, {id, "none", false}, {"server", "", true}} {
		dir := filepath.Join(t.TempDir(), "run")
		code, _, stderr := runCLI(t, t.Context(), "run", "--url", ts.URL, "--tokenizer", c.tokenizer, "--chat-template", c.template,
			"--concurrency", "2", "--requests", "4", "--input-tokens", "64", "--output-tokens", "2", "--no-progress",
			"--metrics-url", "none", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("--tokenizer %s --chat-template %q: exit %d:\n%s", c.tokenizer, c.template, code, stderr)
		}
		for _, r := range readRecords(t, dir) {
			if r.InputTokens != 64 || (r.ServerPromptTokens == 64) != c.exact {
				t.Errorf("--tokenizer %s --chat-template %q request %d: input_tokens %d, server counted %d", c.tokenizer, c.template, r.Index, r.InputTokens, r.ServerPromptTokens)
			}
		}
		if c.tokenizer == "server" {
			if got := readSummaryT(t, dir).Workload.ChatTemplate; got != "server" {
				t.Errorf("--tokenizer server: workload.chat_template = %q, want server", got)
			}
		}
	}
}

// Bad --chat-template values are usage errors that say what is wrong.
func TestChatTemplateErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jinja")
	if err := os.WriteFile(bad, []byte("{% if messages %}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", "openai-completions", "--chat-template", bad}, "--api openai-completions sends its prompt as it is; the APIs a server formats with a chat template are anthropic, ollama, ollama-generate, openai-chat, openai-responses"},
		{[]string{"--chat-template", filepath.Join(t.TempDir(), "missing.jinja")}, "--chat-template: chat template: stat"},
		{[]string{"--chat-template", bad}, "bad.jinja"},
	} {
		args := append([]string{"run", "--requests", "1", "--output-dir", filepath.Join(t.TempDir(), "r")}, c.args...)
		code, _, stderr := runCLI(t, t.Context(), args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
}
