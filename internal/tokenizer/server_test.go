package tokenizer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// fakeTokenizerServer speaks vLLM's (style "vllm") or llama.cpp's ("llamacpp") dialect,
// backed by a real tokenizer so ids are meaningful.
func fakeTokenizerServer(t *testing.T, style string, tok Tokenizer) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
			return
		}
		switch style {
		case "vllm":
			if req["add_special_tokens"] != false {
				t.Errorf("vllm: add_special_tokens = %v, want false", req["add_special_tokens"])
			}
			ids := tok.Encode(req["prompt"].(string))
			json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 8192})
		case "llamacpp":
			if req["add_special"] != false {
				t.Errorf("llama.cpp: add_special = %v, want false", req["add_special"])
			}
			var toks []map[string]any
			for _, id := range tok.Encode(req["content"].(string)) {
				toks = append(toks, map[string]any{"id": id, "piece": tok.Decode([]int{id})})
			}
			json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
		}
	})
	mux.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
			return
		}
		key := map[string]string{"vllm": "prompt", "llamacpp": "content"}[style]
		json.NewEncoder(w).Encode(map[string]any{key: tok.Decode(req.Tokens)})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestServerTokenizer(t *testing.T) {
	local, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	text := "The quick brown fox, 12345 times. 東京"
	for _, style := range []string{"vllm", "llamacpp"} {
		t.Run(style, func(t *testing.T) {
			srv := fakeTokenizerServer(t, style, local)
			tok := NewServer(srv.URL+"/", srv.Client())
			if tok.Name() != "server" {
				t.Errorf("name %q", tok.Name())
			}
			ids := tok.Encode(text)
			if want := local.Encode(text); !slices.Equal(ids, want) {
				t.Fatalf("ids %v, want %v", ids, want)
			}
			if got := tok.Decode(ids); got != text {
				t.Errorf("decode %q", got)
			}
			if err := tok.(*Server).Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestServerTokenizerErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tokenize":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"detail":"Not Found"}`))
		case "/detokenize":
			w.Write([]byte(`{"text":"x"}`))
		}
	}))
	defer srv.Close()
	tok := NewServer(srv.URL, nil).(*Server)
	if ids := tok.Encode("hi"); ids != nil {
		t.Errorf("ids %v on error", ids)
	}
	if err := tok.Err(); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "Not Found") {
		t.Errorf("err %v, want the status and body", err)
	}
	if _, err := tok.Detokenize(context.Background(), []int{1}); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("detokenize err %v", err)
	}
	dead := NewServer("http://127.0.0.1:1", nil).(*Server)
	if _, err := dead.Tokenize(context.Background(), "x"); err == nil {
		t.Error("want a connection error")
	}
}

// A route the server lacks is a 404, 405 or 501; a refusal of the request is not.
func TestHTTPErrorNoRoute(t *testing.T) {
	for status, want := range map[int]bool{404: true, 405: true, 501: true, 400: false, 401: false, 403: false, 500: false} {
		if got := (&HTTPError{Path: "/tokenize", Status: status}).NoRoute(); got != want {
			t.Errorf("HTTP %d: NoRoute %v, want %v", status, got, want)
		}
	}
}
