package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/workload"
)

// TestResponsesEndpoint: /v1/responses streams typed events that end with
// response.completed and its usage, and answers without a stream with one response object.
func TestResponsesEndpoint(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{})
	resp := post(t, ts, "/v1/responses", `{"input":[{"role":"user","content":"one two three"}],"instructions":"be brief","max_output_tokens":3,"stream":true,"ignore_eos":true}`)
	body := string(readAll(t, resp.Body))
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(body, "event: response.output_text.delta\n") != 3 ||
		!strings.Contains(body, `"type":"response.completed"`) || !strings.Contains(body, `"output_tokens":3`) || strings.Contains(body, "[DONE]") {
		t.Fatalf("stream: %d\n%s", resp.StatusCode, body)
	}
	if got := g.got[0]; got.MaxTokens != 3 || !got.IgnoreEOS || got.PromptTokens < 2 {
		t.Errorf("engine request %+v", got)
	}
	resp = post(t, ts, "/v1/responses", `{"input":"hi","max_output_tokens":2}`)
	var doc struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(readAll(t, resp.Body), &doc); err != nil || !strings.HasPrefix(doc.ID, "resp_") ||
		doc.Status != "completed" || doc.Usage.OutputTokens != 2 || len(doc.Output) != 1 || doc.Output[0].Content[0].Text == "" {
		t.Errorf("non-streamed: %v %+v", err, doc)
	}
	resp = post(t, ts, "/v1/responses", `{"max_output_tokens":2}`)
	if e := decodeError(t, resp); resp.StatusCode != 400 || e.Param == nil || *e.Param != "input" {
		t.Errorf("no input: %d %+v", resp.StatusCode, e)
	}
}

// TestPrefillEndpoints: /v1/embeddings answers one vector per input and /v1/rerank (and
// /rerank) one score per document, each request one prefill of all its tokens.
func TestPrefillEndpoints(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{CountTokens: func(s string) int { return len(strings.Fields(s)) }})
	resp := post(t, ts, "/v1/embeddings", `{"input":["a b","c d e","f"]}`)
	var emb struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(readAll(t, resp.Body), &emb); err != nil || len(emb.Data) != 3 || emb.Usage.PromptTokens != 6 ||
		len(emb.Data[2].Embedding) != prefillDim || emb.Data[2].Index != 2 {
		t.Errorf("embeddings: %v %+v", err, emb)
	}
	if got := g.got[0]; got.PromptTokens != 6 || got.MaxTokens != 1 {
		t.Errorf("engine request %+v, want a prefill of 6 tokens", got)
	}
	for _, path := range []string{"/v1/rerank", "/rerank"} {
		resp = post(t, ts, path, `{"query":"q r","documents":["a","b c","d"],"top_n":3}`)
		var rr struct {
			Results []struct {
				Index *int     `json:"index"`
				Score *float64 `json:"relevance_score"`
			} `json:"results"`
		}
		if err := json.Unmarshal(readAll(t, resp.Body), &rr); err != nil || len(rr.Results) != 3 || rr.Results[1].Index == nil || rr.Results[1].Score == nil {
			t.Errorf("%s: %v %+v", path, err, rr)
		}
	}
	resp = post(t, ts, "/v1/rerank", `{"documents":["a"]}`)
	if decodeError(t, resp); resp.StatusCode != 400 {
		t.Errorf("rerank without a query: %d", resp.StatusCode)
	}
}

// TestImageParts: image content parts cost ceil(W/14)·ceil(H/14)/4 prompt tokens each (the
// default patch rule), in chat and Responses requests; a part that is not an image is a 400.
func TestImageParts(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{CountTokens: func(s string) int { return len(strings.Fields(s)) }})
	img := workload.SyntheticImage(workload.ImageConfig{Width: 512, Height: 512, Format: "png"}, 1).URL
	small := workload.SyntheticImage(workload.ImageConfig{Width: 20, Height: 10, Format: "jpeg"}, 2).URL
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		// 37 × 37 patches of 14 px, merged 2 × 2: 343 tokens; 2 × 1 patches: 1 token.
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"a b"},{"type":"image_url","image_url":{"url":"` + img + `"}},{"type":"image_url","image_url":{"url":"` + small + `"}}]}],"max_tokens":1}`, 2 + 343 + 1},
		{"/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"a b c"},{"type":"input_image","image_url":"` + img + `"}]}],"max_output_tokens":1}`, 3 + 343},
	} {
		resp := post(t, ts, tc.path, tc.body)
		b := readAll(t, resp.Body)
		var doc struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				InputTokens  int `json:"input_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || max(doc.Usage.PromptTokens, doc.Usage.InputTokens) != tc.want {
			t.Errorf("%s: %v %s; want %d prompt tokens", tc.path, err, b, tc.want)
		}
	}
	resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8="}}]}]}`)
	if e := decodeError(t, resp); resp.StatusCode != 400 || !strings.Contains(e.Message, "not a PNG, JPEG or GIF image") {
		t.Errorf("not an image: %d %+v", resp.StatusCode, e)
	}
}
