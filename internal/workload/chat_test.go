package workload

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// chatModels are the committed tokenizers whose folders hold the model's chat template.
var chatModels = []string{"../tokenizer/testdata/llama3", "../tokenizer/testdata/qwen3"}

func loadChat(t *testing.T, dir string) (tokenizer.Tokenizer, *chattemplate.Template) {
	t.Helper()
	tok := loadTok(t, dir)
	tm, err := chattemplate.Find(dir)
	if err != nil || tm == nil {
		t.Fatalf("chat template of %s: %v, %v", dir, tm, err)
	}
	return tok, tm
}

// chatTokens counts msgs as the server does: the template's formatting, tokenized.
func chatTokens(t *testing.T, tok tokenizer.Tokenizer, tm *chattemplate.Template, msgs []Message) int {
	t.Helper()
	text, err := tm.Render(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return len(tok.Encode(text))
}

// TestChatTemplateSizesPrompts: with the model's chat template, the formatted conversation
// of every synthetic request (one message, a shared prefix, multi-turn) is exactly the
// requested length, and lengths-only mode (which knows no template) predicts the same
// lengths.
func TestChatTemplateSizesPrompts(t *testing.T) {
	for _, dir := range chatModels {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tok, tm := loadChat(t, dir)
			for _, cfg := range []Config{
				{InputTokens: Dist{Kind: "uniform", A: 20, B: 600}, OutputTokens: Dist{Kind: "fixed", A: 8}},
				{InputTokens: Dist{Kind: "fixed", A: 300}, OutputTokens: Dist{Kind: "fixed", A: 8}, PrefixTokens: 100, PrefixGroups: 2},
				{InputTokens: Dist{Kind: "uniform", A: 30, B: 80}, OutputTokens: Dist{Kind: "uniform", A: 5, B: 40}, Turns: 3},
			} {
				cfg.Seed = 3
				lo := cfg
				lo.LengthsOnly = true
				cfg.Chat = TemplateChat(tm, tok)
				src, los := mustNew(t, cfg, tok), mustNew(t, lo, nil)
				prefixes := map[int]string{}
				for i := range 24 {
					r := src.Request(0, i)
					msgs := r.Messages
					if msgs == nil {
						msgs = []Message{{Role: "user", Content: r.Prompt}}
					}
					if got := chatTokens(t, tok, tm, msgs); got != r.InputTokens {
						t.Fatalf("%+v request %d: formatted conversation is %d tokens, InputTokens %d", cfg, i, got, r.InputTokens)
					}
					if l := los.Request(0, i); l.InputTokens != r.InputTokens {
						t.Fatalf("%+v request %d: %d tokens, lengths-only %d", cfg, i, r.InputTokens, l.InputTokens)
					}
					if cfg.PrefixTokens > 0 {
						// The text still starts with its group's shared prefix.
						p := prefixes[r.PrefixGroup]
						if p == "" {
							prefixes[r.PrefixGroup] = r.Prompt[:len(r.Prompt)/4]
						} else if !strings.HasPrefix(r.Prompt, p) {
							t.Fatalf("request %d lost its shared prefix", i)
						}
					}
				}
				if cfg.Turns > 1 {
					// Turn 2 carries turn 1's messages verbatim.
					a, b := src.Request(0, 1), src.Request(0, 2)
					if !slices.Equal(b.Messages[:len(a.Messages)], a.Messages) {
						t.Fatal("turn 2 does not carry turn 1's messages")
					}
				}
			}
		})
	}
}

// TestChatTemplateCountsDatasets: dataset prompts (a prompt or a conversation) count as
// the template formats them.
func TestChatTemplateCountsDatasets(t *testing.T) {
	tok, tm := loadChat(t, chatModels[0])
	p := filepath.Join(t.TempDir(), "d.jsonl")
	body := `{"prompt": "Say hello to the world."}` + "\n" +
		`{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]}` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	src := mustNew(t, Config{Dataset: "jsonl:" + p, OutputTokens: Dist{Kind: "fixed", A: 4}, Chat: TemplateChat(tm, tok)}, tok)
	for i := range 2 {
		r := src.Request(0, i)
		msgs := r.Messages
		if msgs == nil {
			msgs = []Message{{Role: "user", Content: r.Prompt}}
		}
		if want := chatTokens(t, tok, tm, msgs); r.InputTokens != want {
			t.Errorf("row %d: InputTokens %d, formatted %d", i, r.InputTokens, want)
		}
	}
}

// TestChatCountsWhatIsSent: an API that sends a conversation's joined text as one message
// (OneMessage: Ollama's /api/generate) has it counted so; a conversation the template
// refuses is sized by its text, and the ChatWatch says how many were and why.
func TestChatCountsWhatIsSent(t *testing.T) {
	tok, tm := loadChat(t, chatModels[0])
	p := filepath.Join(t.TempDir(), "d.jsonl")
	body := `{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]}` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dataset: "jsonl:" + p, OutputTokens: Dist{Kind: "fixed", A: 4}, Chat: TemplateChat(tm, tok), OneMessage: true}
	r := mustNew(t, cfg, tok).Request(0, 0)
	if want := chatTokens(t, tok, tm, []Message{{Role: "user", Content: r.Prompt}}); r.InputTokens != want || r.Prompt != "Be brief.\nWhy?" {
		t.Errorf("one message: InputTokens %d for %q, want %d", r.InputTokens, r.Prompt, want)
	}

	rt := writeTemplate(t, `{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system messages') }}{% endif %}{{ m.content }}{% endfor %}`)
	w := WatchChat(TemplateChat(rt, tok))
	cfg.Chat, cfg.OneMessage = w, false
	r = mustNew(t, cfg, tok).Request(0, 0)
	if want := len(tok.Encode(r.Prompt)); r.InputTokens != want {
		t.Errorf("refused: InputTokens %d, want the text's %d", r.InputTokens, want)
	}
	if n, err := w.Failures(); n != 1 || err == nil || !strings.Contains(err.Error(), "no system messages") {
		t.Errorf("Failures = %d, %v; want 1 with the template's reason", n, err)
	}
}

// TestChatTemplateRefusal: a template that refuses the source's conversations stops New
// with its reason and what to do.
func TestChatTemplateRefusal(t *testing.T) {
	tok := loadTok(t, qwenPath)
	tm := writeTemplate(t, `{% for m in messages %}{% if m.role == 'assistant' %}{{ raise_exception('assistant turns are not supported') }}{% endif %}{{ m.content }}{% endfor %}`)
	cfg := Config{InputTokens: Dist{Kind: "fixed", A: 50}, OutputTokens: Dist{Kind: "fixed", A: 5}, Chat: TemplateChat(tm, tok)}
	mustNew(t, cfg, tok) // one message: accepted
	cfg.Turns = 2
	_, err := New(cfg, tok)
	if err == nil || !strings.Contains(err.Error(), "assistant turns are not supported") || !strings.Contains(err.Error(), "--chat-template") {
		t.Fatalf("New = %v", err)
	}
}

// TestChatTemplateTooShort: prompts shorter than the template's own tokens are refused up
// front, with the template's cost and what to do.
func TestChatTemplateTooShort(t *testing.T) {
	tok, tm := loadChat(t, chatModels[0])
	_, err := New(Config{InputTokens: Dist{Kind: "uniform", A: 5, B: 300}, OutputTokens: Dist{Kind: "fixed", A: 4}, Chat: TemplateChat(tm, tok)}, tok)
	if err == nil || !strings.Contains(err.Error(), "adds 10 tokens to every request, so a prompt needs at least 11") || !strings.Contains(err.Error(), "--chat-template none") {
		t.Fatalf("New = %v", err)
	}
}

// writeTemplate loads a chat template written to a file of its own.
func writeTemplate(t *testing.T, body string) *chattemplate.Template {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, err := chattemplate.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// ChatPrefixTokens is the template's tokens before every prompt's text: the start that two
// synthetic prompts' formatted conversations share, and no more; 0 without a template.
func TestChatPrefixTokens(t *testing.T) {
	for _, dir := range chatModels {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tok, tm := loadChat(t, dir)
			n := ChatPrefixTokens(WatchChat(TemplateChat(tm, tok)))
			if n < 1 || n > 40 {
				t.Fatalf("%d template prefix tokens", n)
			}
			src := mustNew(t, Config{InputTokens: Fixed(64), OutputTokens: Fixed(4), Seed: 3, Chat: TemplateChat(tm, tok)}, tok)
			var ids [2][]int
			for i := range ids {
				text, err := tm.Render([]Message{{Role: "user", Content: src.Request(0, i).Prompt}})
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = tok.Encode(text)
			}
			common := 0
			for common < len(ids[0]) && common < len(ids[1]) && ids[0][common] == ids[1][common] {
				common++
			}
			if common != n {
				t.Errorf("two prompts share %d tokens, ChatPrefixTokens says %d", common, n)
			}
		})
	}
	if n := ChatPrefixTokens(nil); n != 0 {
		t.Errorf("no template: %d", n)
	}
}
