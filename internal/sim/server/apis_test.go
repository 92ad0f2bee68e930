package server

import (
	"encoding/json"
	"strings"
	"testing"
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
