package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/internal/tokenizer"
)

// ReadProps reads what a llama.cpp server publishes of its limits at /props: total_slots
// (its parallel sequences, -np) and each slot's context (default_generation_settings.n_ctx;
// the KV cache is that times the slots, unless CheckUnified finds them sharing one). A server without /props (vLLM, Ollama) gives a
// zero Published and no error; one whose /props is not llama.cpp's shape gives an error.
func ReadProps(ctx context.Context, hc *http.Client, baseURL string) (Published, error) {
	root, err := serverRoot(baseURL)
	if err != nil {
		return Published{}, err
	}
	where := root + "/props"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return Published{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Published{}, nil // nothing published; the probe itself will say if the server is down
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Published{}, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Published{}, nil
	}
	return parseProps(b, where)
}

func parseProps(b []byte, where string) (Published, error) {
	var p struct {
		Slots    *int `json:"total_slots"`
		Defaults struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Slots == nil {
		return Published{}, nil // not llama.cpp's /props: nothing we read
	}
	if *p.Slots < 1 || p.Defaults.NCtx < 0 {
		return Published{}, fmt.Errorf("%s: total_slots %d and n_ctx %d are not a server's limits", where, *p.Slots, p.Defaults.NCtx)
	}
	// Each slot's own KV cache until CheckUnified says they share one.
	return Published{Slots: *p.Slots, SeqTokens: p.Defaults.NCtx, ContextTokens: p.Defaults.NCtx * *p.Slots, How: "llama.cpp /props total_slots and n_ctx"}, nil
}

// CheckUnified finds whether a llama.cpp server's slots share one KV cache, which /props
// does not say: each slot then reports the whole cache as its context (n_ctx), and the
// cache is n_ctx, not slots × n_ctx. It sends k = min(slots, 3) prompts in turn, each of
// 1.2/k of a slot's context, 1 token out, and reads /slots: a shared cache holds only
// n_ctx, so the server clears idle slots to make room (and, with its RAM prompt cache,
// clears them anyway as each new task starts), while slots with caches of their own keep
// every prompt. hc must carry the key and allow a prefill of 1.2 × n_ctx tokens. A server
// without /slots (--no-slots) or /tokenize leaves pub as it is, with a note in How.
func CheckUnified(ctx context.Context, hc *http.Client, baseURL string, pub Published, seed int64) (Published, error) {
	n := pub.seqTokens()
	if pub.Slots < 2 || n < 64 {
		return pub, nil // one slot: its cache is the server's either way
	}
	root, err := serverRoot(baseURL)
	if err != nil {
		return pub, err
	}
	k := min(pub.Slots, 3)
	l := min(n-8, (n*6/5+k-1)/k)
	pool, err := tokenPool(ctx, hc, root)
	if err != nil {
		pub.How += "; whether the slots share one KV cache not checked (" + err.Error() + "): taken as a cache per slot"
		return pub, nil
	}
	rng := uint64(seed)*0x9E3779B97F4A7C15 | 1
	for j := range k {
		ids := make([]int, l)
		for i := range ids {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			ids[i] = pool[rng%uint64(len(pool))]
		}
		if _, err := postJSON(ctx, hc, root+"/completion", map[string]any{"prompt": ids, "n_predict": 1, "cache_prompt": true}); err != nil {
			return pub, fmt.Errorf("checking whether the slots share one KV cache: prompt %d of %d (%d tokens): %w", j+1, k, l, err)
		}
	}
	held, err := slotsHolding(ctx, hc, root, l/2)
	if err != nil {
		pub.How += "; whether the slots share one KV cache not checked (" + err.Error() + "): taken as a cache per slot"
		return pub, nil
	}
	if held >= k {
		pub.How += fmt.Sprintf("; a KV cache per slot (%d prompts of %d tokens, %d×%d in all, all still held)", k, l, k, l)
		return pub, nil
	}
	pub.Unified, pub.ContextTokens = true, n
	pub.How += fmt.Sprintf("; one KV cache shared by the slots (of %d prompts of %d tokens sent in turn, %d still held: a cache of %d tokens)", k, l, held, n)
	if trainCtx(ctx, hc, root) == n {
		// llama.cpp caps a slot at the model's training context, not the cache: -c beyond it
		// leaves more cache than any slot reports.
		pub.How += fmt.Sprintf(", or more: each slot is capped at the model's training context of %d tokens, so the cache (-c) may be larger; kv_cache_tokens is its lower bound", n)
	}
	return pub, nil
}

// trainCtx is the model's training context as llama.cpp's /v1/models gives it (meta.n_ctx_train); 0 unknown.
func trainCtx(ctx context.Context, hc *http.Client, root string) int {
	var m struct {
		Data []struct {
			Meta struct {
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	if getJSON(ctx, hc, root+"/v1/models", &m) != nil || len(m.Data) == 0 {
		return 0
	}
	return m.Data[0].Meta.NCtxTrain
}

// serverRoot is the server's root URL: baseURL without a trailing /v1.
func serverRoot(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// tokenPool is the ids of a text of numbers, as the server tokenizes it (tokenizer.Server,
// its /tokenize): prompts drawn from them are the server's tokens, exactly as many as asked.
func tokenPool(ctx context.Context, hc *http.Client, root string) ([]int, error) {
	var text strings.Builder
	for i := range 600 {
		fmt.Fprintf(&text, "%d ", 1000+i*7)
	}
	ids, err := tokenizer.NewServer(root, hc).(*tokenizer.Server).Tokenize(ctx, text.String())
	if err != nil {
		return nil, err
	}
	if len(ids) < 16 {
		return nil, fmt.Errorf("/tokenize gave %d tokens for 600 numbers", len(ids))
	}
	return ids, nil
}

// slotsHolding counts the slots whose cached prompt has at least min tokens (/slots).
func slotsHolding(ctx context.Context, hc *http.Client, root string, min int) (int, error) {
	var slots []struct {
		NPromptTokens int `json:"n_prompt_tokens"`
	}
	if err := getJSON(ctx, hc, root+"/slots", &slots); err != nil {
		return 0, err
	}
	held := 0
	for _, s := range slots {
		if s.NPromptTokens >= min {
			held++
		}
	}
	return held, nil
}

// getJSON decodes the JSON of a 200 from u into v.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	path := u[strings.LastIndexByte(u, '/'):]
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// postJSON posts body as JSON and returns the response of a 200.
func postJSON(ctx context.Context, hc *http.Client, u string, body any) ([]byte, error) {
	js, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(js))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d %s", u[strings.LastIndexByte(u, '/'):], resp.StatusCode, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	return b, nil
}

// PublishedFile is where a live calibration writes, in each probe step's run folder, what the
// server published of its limits.
const PublishedFile = "server-limits.json"

// Write writes p as PublishedFile's JSON.
func (p Published) Write(w io.Writer) error {
	return json.NewEncoder(w).Encode(p)
}

// readPublished reads dir's PublishedFile; zero and no error when there is none.
func readPublished(dir string) (Published, error) {
	b, err := os.ReadFile(filepath.Join(dir, PublishedFile))
	if errors.Is(err, os.ErrNotExist) {
		return Published{}, nil
	}
	if err != nil {
		return Published{}, err
	}
	var p Published
	if err := json.Unmarshal(b, &p); err != nil || p.Slots < 0 || p.ContextTokens < 0 {
		return Published{}, fmt.Errorf("%s: not what calibrate writes (%v)", filepath.Join(dir, PublishedFile), err)
	}
	return p, nil
}
