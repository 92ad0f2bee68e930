package tokenizer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/chattemplate"
)

// fakeChatServer formats messages with the Llama 3 template as vLLM does (/tokenize with
// messages) or as llama.cpp does (/tokenize ignores messages; /apply-template gives the
// prompt without its BOS, which /tokenize with add_special adds back), or not at all.
func fakeChatServer(t *testing.T, style string, tok Tokenizer, tm *chattemplate.Template) *httptest.Server {
	t.Helper()
	const bos = "<|begin_of_text|>"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages   []chattemplate.Message `json:"messages"`
			Content    *string                `json:"content"`
			AddSpecial bool                   `json:"add_special"`
			AddGenPr   *bool                  `json:"add_generation_prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		var ids []int
		switch {
		case style == "vllm" && req.Messages != nil:
			if req.AddGenPr == nil || !*req.AddGenPr {
				t.Error("vllm: add_generation_prompt not true")
			}
			text, err := tm.Render(req.Messages)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			ids = tok.Encode(text)
		case style == "llamacpp" && req.Content != nil:
			ids = tok.Encode(*req.Content)
			if req.AddSpecial {
				ids = append(tok.Encode(bos), ids...)
			}
		case style == "none":
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": append([]int{}, ids...)})
	})
	mux.HandleFunc("POST /apply-template", func(w http.ResponseWriter, r *http.Request) {
		if style != "llamacpp" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []chattemplate.Message `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		text, err := tm.Render(req.Messages)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"prompt": strings.TrimPrefix(text, bos)})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestServerCountChat: a conversation counts as the server's chat path counts it, by
// vLLM's route and by llama.cpp's, and a server with neither says so.
func TestServerCountChat(t *testing.T) {
	const dir = "testdata/llama3"
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := chattemplate.Find(dir)
	if err != nil || tm == nil {
		t.Fatalf("template: %v %v", tm, err)
	}
	msgs := []chattemplate.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Why is the sky blue?"}}
	text, _ := tm.Render(msgs)
	want := len(tok.Encode(text))
	for _, style := range []string{"vllm", "llamacpp"} {
		s := NewServer(fakeChatServer(t, style, tok, tm).URL, nil).(*Server)
		for range 2 { // the second call takes the route the first found
			if n, err := s.CountChat(msgs); err != nil || n != want {
				t.Errorf("%s: CountChat = %d, %v; want %d", style, n, err, want)
			}
		}
	}
	s := NewServer(fakeChatServer(t, "none", tok, tm).URL, nil).(*Server)
	if _, err := s.CountChat(msgs); err == nil || !strings.Contains(err.Error(), "formats no chat messages") {
		t.Errorf("a server with neither route: %v", err)
	}
	if s.Source() != "server" {
		t.Errorf("Source = %q", s.Source())
	}

	// A server that is briefly unavailable while the route is unknown: its own error, not
	// "neither route", and the route is still found once it answers.
	good := fakeChatServer(t, "vllm", tok, tm)
	failing := 2
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing > 0 {
			failing--
			http.Error(w, "loading model", http.StatusServiceUnavailable)
			return
		}
		good.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	s = NewServer(flaky.URL, nil).(*Server)
	if _, err := s.CountChat(msgs); err == nil || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), "formats no chat messages") {
		t.Errorf("an unavailable server: %v, want its 503", err)
	}
	if n, err := s.CountChat(msgs); err != nil || n != want {
		t.Errorf("once it answers: CountChat = %d, %v; want %d", n, err, want)
	}
}
