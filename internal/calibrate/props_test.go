package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeLlama is a llama.cpp server's limits as CheckUnified sees them: slots of slotCtx
// tokens, each prompt served by the least recently used slot and held there after. With a
// unified cache of cacheTokens, a prompt that does not fit clears idle slots until it does;
// with clearIdle (llama.cpp's RAM prompt cache on) idle slots are cleared as each task starts.
type fakeLlama struct {
	slots, slotCtx, trainCtx int
	unified, clearIdle       bool
	noSlots                  bool // --no-slots
	cacheTokens              int
	held                     []int // prompt tokens each slot holds
	lastUsed                 []int
	clock                    int
}

func (f *fakeLlama) serve(t *testing.T) *httptest.Server {
	f.held, f.lastUsed = make([]int, f.slots), make([]int, f.slots)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"total_slots": %d, "default_generation_settings": {"n_ctx": %d}}`, f.slots, f.slotCtx)
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data": [{"id": "m", "meta": {"n_ctx": %d, "n_ctx_train": %d}}]}`, f.slotCtx, f.trainCtx)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Content string }
		json.NewDecoder(r.Body).Decode(&req)
		ids := []int{}
		for i := range strings.Fields(req.Content) {
			ids = append(ids, 100+i)
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids})
	})
	mux.HandleFunc("POST /completion", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt []int }
		json.NewDecoder(r.Body).Decode(&req)
		if len(req.Prompt) >= f.slotCtx {
			http.Error(w, `{"error": {"message": "the request exceeds the available context size"}}`, http.StatusBadRequest)
			return
		}
		lru := 0
		for i := range f.slots {
			if f.lastUsed[i] < f.lastUsed[lru] {
				lru = i
			}
		}
		f.held[lru] = 0
		if f.unified {
			for i := range f.slots {
				if f.clearIdle && i != lru {
					f.held[i] = 0
				}
			}
			for i := 0; i < f.slots && sum(f.held)+len(req.Prompt) > f.cacheTokens; i++ {
				f.held[i] = 0
			}
		}
		f.clock++
		f.held[lru], f.lastUsed[lru] = len(req.Prompt), f.clock
		fmt.Fprint(w, `{"content": "x"}`)
	})
	mux.HandleFunc("GET /slots", func(w http.ResponseWriter, r *http.Request) {
		if f.noSlots {
			http.Error(w, "This server does not support slots endpoint.", http.StatusNotImplemented)
			return
		}
		var out []map[string]int
		for i, n := range f.held {
			out = append(out, map[string]int{"id": i, "n_ctx": f.slotCtx, "n_prompt_tokens": n})
		}
		json.NewEncoder(w).Encode(out)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestCheckUnified(t *testing.T) {
	for _, tc := range []struct {
		name           string
		f              fakeLlama
		unified        bool
		kv, seq        int
		howHas, howNot string
	}{
		// llama-server -c 8192 -np 4: a cache of 2048 per slot.
		{"per slot", fakeLlama{slots: 4, slotCtx: 2048, trainCtx: 131072}, false, 8192, 2048, "a KV cache per slot", "shared"},
		// llama-server -c 8192: four slots sharing 8192, its RAM prompt cache clearing idle slots.
		{"unified, prompt cache", fakeLlama{slots: 4, slotCtx: 8192, trainCtx: 131072, unified: true, clearIdle: true, cacheTokens: 8192}, true, 8192, 8192, "one KV cache shared", "lower bound"},
		// --cache-ram 0: idle slots are cleared only when a prompt does not fit.
		{"unified, no prompt cache", fakeLlama{slots: 4, slotCtx: 8192, trainCtx: 131072, unified: true, cacheTokens: 8192}, true, 8192, 8192, "one KV cache shared", "lower bound"},
		// -c beyond the model's training context: each slot is capped there.
		{"unified, capped slots", fakeLlama{slots: 4, slotCtx: 4096, trainCtx: 4096, unified: true, clearIdle: true, cacheTokens: 8192}, true, 4096, 4096, "lower bound", ""},
		{"two slots", fakeLlama{slots: 2, slotCtx: 1024, trainCtx: 131072}, false, 2048, 1024, "2 prompts of 614 tokens", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.f.serve(t)
			ctx := context.Background()
			pub, err := ReadProps(ctx, s.Client(), s.URL+"/v1")
			if err != nil {
				t.Fatal(err)
			}
			if pub, err = CheckUnified(ctx, s.Client(), s.URL+"/v1", pub, 7); err != nil {
				t.Fatal(err)
			}
			if pub.Unified != tc.unified || pub.ContextTokens != tc.kv || pub.SeqTokens != tc.seq {
				t.Errorf("unified %t, KV %d, a slot %d; want %t, %d, %d (%s)", pub.Unified, pub.ContextTokens, pub.SeqTokens, tc.unified, tc.kv, tc.seq, pub.How)
			}
			if !strings.Contains(pub.How, tc.howHas) || (tc.howNot != "" && strings.Contains(pub.How, tc.howNot)) {
				t.Errorf("how %q: want it to say %q and not %q", pub.How, tc.howHas, tc.howNot)
			}
		})
	}
}

func TestCheckUnifiedWithoutSlotsEndpoint(t *testing.T) {
	// A server started with --no-slots: the per-slot reading stands, and says so.
	f := fakeLlama{slots: 4, slotCtx: 2048, trainCtx: 131072, noSlots: true}
	s := f.serve(t)
	pub, err := ReadProps(context.Background(), s.Client(), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	pub, err = CheckUnified(context.Background(), s.Client(), s.URL, pub, 1)
	if err != nil || pub.Unified || pub.ContextTokens != 8192 || !strings.Contains(pub.How, "not checked (/slots: HTTP 501)") {
		t.Errorf("got %+v, %v", pub, err)
	}
}

func TestPrefillLengths(t *testing.T) {
	for _, tc := range []struct {
		longest int
		want    string
	}{
		{4096, "[32 128 512 1024 2048 3072 4096]"},
		{1968, "[32 128 512 984 1476 1968]"},
		{100, "[32 50 75 100]"},
		{64, "[32 48 64]"},
	} {
		if got := fmt.Sprint(prefillLengths(tc.longest)); got != tc.want {
			t.Errorf("prefillLengths(%d) = %s, want %s", tc.longest, got, tc.want)
		}
	}
}

func TestTruncated(t *testing.T) {
	pt := func(intended, server int) Point {
		p := Point{Concurrency: 1}
		for range 8 {
			p.Requests = append(p.Requests, Request{Prompt: server, Intended: intended, Output: 16})
		}
		return p
	}
	// Ollama at num_ctx 2048, its tokenizer counting 10 % more than the client's: prompts
	// past the context come back as 2048 (give or take its template's tokens).
	cut := []Point{pt(32, 40), pt(512, 568), pt(1024, 1131), pt(2048, 2048), pt(3072, 2040), pt(4096, 2047)}
	if got := truncated(cut); got != 2048 {
		t.Errorf("truncated = %d, want 2048", got)
	}
	// As Ollama 0.6.5 counted a probe's chat prompts (its template adds 10 tokens), at
	// num_ctx 2048: the short prompts' ratio alone (42/32) would call 1,024 tokens cut.
	ollama := []Point{pt(32, 42), pt(128, 138), pt(512, 523), pt(1024, 1036), pt(2048, 2048), pt(3072, 2048), pt(4096, 2048), pt(32, 42)}
	if got := truncated(ollama); got != 2048 {
		t.Errorf("truncated = %d for Ollama's counts, want 2048", got)
	}
	// A server that counts more than the client throughout cut nothing.
	whole := []Point{pt(32, 40), pt(512, 568), pt(1024, 1131), pt(2048, 2270), pt(4096, 4530)}
	if got := truncated(whole); got != 0 {
		t.Errorf("truncated = %d for prompts served whole, want 0", got)
	}
	// Short server counts scattered, not at one ceiling, are not a cut at a context.
	scattered := []Point{pt(32, 40), pt(512, 568), pt(2048, 900), pt(4096, 2000)}
	if got := truncated(scattered); got != 0 {
		t.Errorf("truncated = %d for counts with no ceiling, want 0", got)
	}
}
