package workload

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// TestMultiTurn: turn k carries turns 0..k-1 verbatim, exact token counts everywhere, and
// lengths-only mode predicts the same lengths.
func TestMultiTurn(t *testing.T) {
	for _, spec := range []string{"o200k_base", llama2Path} {
		t.Run(spec, func(t *testing.T) { testMultiTurn(t, spec) })
	}
}

func testMultiTurn(t *testing.T, spec string) {
	tok := loadTok(t, spec)
	cfg := Config{InputTokens: Dist{Kind: "uniform", A: 5, B: 40}, OutputTokens: Dist{Kind: "uniform", A: 3, B: 30},
		Turns: 4, ThinkTime: 2 * time.Second, Seed: 9}
	src := mustNew(t, cfg, tok)
	cfg.LengthsOnly = true
	lo := mustNew(t, cfg, nil)
	for c := range 3 {
		var prev Request
		for k := range 4 {
			i := c*4 + k
			r := src.Request(1, i)
			if r.Conversation != c || r.Turn != k || r.Turns != 4 || len(r.Messages) != 2*k+1 {
				t.Fatalf("request %d: conversation %d turn %d/%d, %d messages", i, r.Conversation, r.Turn, r.Turns, len(r.Messages))
			}
			if (k == 0) != (r.ThinkTime == 0) || k > 0 && r.ThinkTime != 2*time.Second {
				t.Errorf("request %d: think time %v", i, r.ThinkTime)
			}
			sum := 0
			for _, m := range r.Messages {
				sum += len(tok.Encode(m.Content))
			}
			if sum != r.InputTokens || len(tok.Encode(r.Prompt)) != r.InputTokens {
				t.Fatalf("request %d: messages %d tokens, prompt %d, InputTokens %d", i, sum, len(tok.Encode(r.Prompt)), r.InputTokens)
			}
			if k > 0 {
				// History: the previous request's messages, then its reply of exactly the
				// length that request asked for.
				if !slices.Equal(r.Messages[:2*k-1], prev.Messages) {
					t.Fatalf("request %d does not carry the previous turn's messages", i)
				}
				reply := r.Messages[2*k-1]
				if reply.Role != "assistant" || len(tok.Encode(reply.Content)) != prev.OutputTokens {
					t.Fatalf("request %d: reply %q has %d tokens, previous asked %d", i, reply.Role, len(tok.Encode(reply.Content)), prev.OutputTokens)
				}
			}
			if l := lo.Request(1, i); l.InputTokens != r.InputTokens || l.OutputTokens != r.OutputTokens || l.Messages != nil {
				t.Fatalf("request %d: lengths-only %d/%d, full %d/%d", i, l.InputTokens, l.OutputTokens, r.InputTokens, r.OutputTokens)
			}
			prev = r
		}
	}
	// Conversations differ from their first token.
	if a, b := src.Request(1, 0).Prompt, src.Request(1, 4).Prompt; a[:12] == b[:12] {
		t.Errorf("conversations 0 and 1 start alike: %q %q", a[:12], b[:12])
	}
	// Written and read back, a turn keeps both forms.
	var buf bytes.Buffer
	r := src.Request(1, 2)
	if err := WriteJSONL(&buf, r); err != nil {
		t.Fatal(err)
	}
	back := mustNew(t, Config{Dataset: "jsonl:" + writeFile(t, "t.jsonl", buf.String()), OutputTokens: Fixed(1)}, tok).Request(0, 0)
	if back.Prompt != r.Prompt || !slices.Equal(back.Messages, r.Messages) || back.InputTokens != r.InputTokens {
		t.Errorf("round trip: %+v", back)
	}
}
