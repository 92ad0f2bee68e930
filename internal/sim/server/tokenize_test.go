package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// TestTokenizeEndpoints: /tokenize and /detokenize answer as vLLM and llama.cpp do, with
// the server's tokenizer, so llmbench's own --tokenizer server client works against it,
// and the count is the prompt_tokens that generation reports.
func TestTokenizeEndpoints(t *testing.T) {
	for _, spec := range []string{"o200k_base", "../../tokenizer/testdata/llama2/tokenizer.json.gz"} {
		tok, err := tokenizer.Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		_, ts := newTestServer(t, &fakeGen{}, Options{ModelName: "m", Tokenizer: tok})
		client := tokenizer.NewServer(ts.URL, ts.Client()).(*tokenizer.Server)
		text := "Hello world, naïve 東京 😀\n\tend "
		ids, err := client.Tokenize(t.Context(), text)
		if err != nil {
			t.Fatal(err)
		}
		if want := tok.Encode(text); !slices.Equal(ids, want) {
			t.Errorf("%s: /tokenize %v, want %v", spec, ids, want)
		}
		back, err := client.Detokenize(t.Context(), ids)
		if err != nil || back != tok.Decode(ids) {
			t.Errorf("%s: /detokenize %q %v, want %q", spec, back, err, tok.Decode(ids))
		}

		// llama.cpp's field name, and chat messages (counted one by one, as generation does).
		var got struct {
			Count  int   `json:"count"`
			Tokens []int `json:"tokens"`
		}
		resp := post(t, ts, "/tokenize", `{"content": "Hello world"}`)
		if err := json.Unmarshal(readAll(t, resp.Body), &got); err != nil || !slices.Equal(got.Tokens, tok.Encode("Hello world")) || got.Count != len(got.Tokens) {
			t.Errorf("%s: content: %+v %v", spec, got, err)
		}
		resp = post(t, ts, "/tokenize", `{"model": "m", "messages": [{"role": "user", "content": "Hello"}, {"role": "user", "content": " world"}]}`)
		if err := json.Unmarshal(readAll(t, resp.Body), &got); err != nil || got.Count != len(tok.Encode("Hello"))+len(tok.Encode(" world")) {
			t.Errorf("%s: messages: %+v %v", spec, got, err)
		}
		resp = post(t, ts, "/v1/completions", `{"model": "m", "prompt": `+mustJSON(text)+`, "max_tokens": 2}`)
		var comp struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(readAll(t, resp.Body), &comp); err != nil || comp.Usage.PromptTokens != len(ids) {
			t.Errorf("%s: prompt_tokens %d, /tokenize counts %d (%v)", spec, comp.Usage.PromptTokens, len(ids), err)
		}

		for _, c := range []struct {
			path, body string
			status     int
			want       string
		}{
			{"/tokenize", `{"model": "other", "prompt": "x"}`, http.StatusNotFound, "this server serves `m`"},
			{"/tokenize", `{}`, http.StatusBadRequest, "prompt is required"},
			{"/tokenize", `{"prompt": 3}`, http.StatusBadRequest, "expected a string"},
			{"/detokenize", `{}`, http.StatusBadRequest, "tokens is required"},
		} {
			resp := post(t, ts, c.path, c.body)
			if b := string(readAll(t, resp.Body)); resp.StatusCode != c.status || !strings.Contains(b, c.want) {
				t.Errorf("%s %s: %d %s", c.path, c.body, resp.StatusCode, b)
			}
		}
		resp, err = ts.Client().Get(ts.URL + "/tokenize")
		if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET /tokenize: %v %v", resp.StatusCode, err)
		}
	}
	// Without a tokenizer there is no /tokenize, as on servers that have none.
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	if resp := post(t, ts, "/tokenize", `{"prompt": "x"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("no tokenizer: %d", resp.StatusCode)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestChatTemplateCounts: with a chat template the server formats chat and Responses
// conversations before counting them, and /tokenize's messages count is generation's
// prompt_tokens; a conversation the template refuses is a 400 with the template's reason.
func TestChatTemplateCounts(t *testing.T) {
	const dir = "../../tokenizer/testdata/llama3"
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := chattemplate.Find(dir)
	if err != nil || tm == nil {
		t.Fatalf("template: %v %v", tm, err)
	}
	_, ts := newTestServer(t, &fakeGen{}, Options{ModelName: "m", Tokenizer: tok, ChatTemplate: tm})
	conv := []chattemplate.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello world"}}
	formatted, err := tm.Render(conv)
	if err != nil {
		t.Fatal(err)
	}
	want := len(tok.Encode(formatted))
	convJSON, _ := json.Marshal(conv)
	var got struct {
		Count int `json:"count"`
	}
	resp := post(t, ts, "/tokenize", `{"messages": `+string(convJSON)+`}`)
	if err := json.Unmarshal(readAll(t, resp.Body), &got); err != nil || got.Count != want {
		t.Errorf("/tokenize messages: %+v %v, want count %d", got, err, want)
	}
	var usage struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			InputTokens  int `json:"input_tokens"`
		} `json:"usage"`
	}
	resp = post(t, ts, "/v1/chat/completions", `{"model": "m", "messages": `+string(convJSON)+`, "max_tokens": 2}`)
	if err := json.Unmarshal(readAll(t, resp.Body), &usage); err != nil || usage.Usage.PromptTokens != want {
		t.Errorf("chat prompt_tokens %d (%v), want %d", usage.Usage.PromptTokens, err, want)
	}
	resp = post(t, ts, "/v1/responses", `{"model": "m", "instructions": "Be brief.", "input": "Hello world", "max_output_tokens": 2}`)
	if err := json.Unmarshal(readAll(t, resp.Body), &usage); err != nil || usage.Usage.InputTokens != want {
		t.Errorf("responses input_tokens %d (%v), want %d", usage.Usage.InputTokens, err, want)
	}

	strict, err := chattemplate.Load(writeTemp(t, "strict.jinja", `{% if messages[0].role != 'user' %}{{ raise_exception('the first message must be the user\'s') }}{% endif %}{{ messages[0].content }}`))
	if err != nil {
		t.Fatal(err)
	}
	_, ts = newTestServer(t, &fakeGen{}, Options{ModelName: "m", Tokenizer: tok, ChatTemplate: strict})
	resp = post(t, ts, "/v1/chat/completions", `{"model": "m", "messages": [{"role": "assistant", "content": "x"}], "max_tokens": 2}`)
	if body := string(readAll(t, resp.Body)); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "the first message must be the user") {
		t.Errorf("refused conversation: %d %s", resp.StatusCode, body)
	}
}

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
