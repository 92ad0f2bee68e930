package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// maxWholeBody bounds a response that comes as one JSON document (--stream=false,
// embeddings, rerank): a batch of 64 vectors of 8,192 floats is about 10 MB.
const maxWholeBody = 256 << 20

// readWhole reads a whole response body and returns it with the arrival time of its last
// bytes, stamped by now as stream events are.
func readWhole(body io.Reader, now func() time.Time) ([]byte, time.Time, error) {
	buf := make([]byte, 0, 4096)
	var last time.Time
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			buf = buf[:len(buf)+n]
			last = now()
			if len(buf) > maxWholeBody {
				return buf, last, fmt.Errorf("response body larger than %d MiB", maxWholeBody>>20)
			}
		}
		if err == io.EOF {
			if last.IsZero() {
				last = now()
			}
			return buf, last, nil
		}
		if err != nil {
			return buf, last, err
		}
	}
}

// wholeDoc is the union of the fields the APIs' whole (non-streamed) responses carry.
type wholeDoc struct {
	ID      string `json:"id"`
	Status  string `json:"status"` // responses
	Choices []struct {
		Message struct {
			Content          json.RawMessage `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			Refusal          string          `json:"refusal"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		Text string `json:"text"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		InputTokens      int `json:"input_tokens"`
		OutputTokens     int `json:"output_tokens"`
		// The prompt tokens served from the prompt cache, as decoder.openAIUsage reads them;
		// raw, so that an odd value says nothing rather than failing the response.
		PromptTokensDetails *struct {
			CachedTokens json.RawMessage `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		InputTokensDetails *struct {
			CachedTokens json.RawMessage `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		PromptCacheHitTokens json.RawMessage `json:"prompt_cache_hit_tokens"`
	} `json:"usage"`
	Timings *struct {
		PromptN     int     `json:"prompt_n"`
		CacheN      *int    `json:"cache_n"`
		PromptMS    float64 `json:"prompt_ms"`
		PredictedN  int     `json:"predicted_n"`
		PredictedMS float64 `json:"predicted_ms"`
	} `json:"timings"`
	Output []struct { // responses
		Type    string `json:"type"`
		Content []struct {
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		} `json:"content"`
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
		Name      string `json:"name"` // function_call
		Arguments string `json:"arguments"`
	} `json:"output"`
	Content json.RawMessage `json:"content"` // llama.cpp: a string; Anthropic: content blocks
	Message *struct {       // Ollama chat
		Content   string          `json:"content"`
		Thinking  string          `json:"thinking"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	} `json:"message"`
	Response           string  `json:"response"` // Ollama generate
	EvalCount          int     `json:"eval_count"`
	PromptEvalCount    int     `json:"prompt_eval_count"`
	EvalDuration       float64 `json:"eval_duration"`
	PromptEvalDuration float64 `json:"prompt_eval_duration"`
	TotalDuration      float64 `json:"total_duration"`
	TokensPredicted    int     `json:"tokens_predicted"` // llama.cpp
	TokensEvaluated    int     `json:"tokens_evaluated"`
	GeneratedText      string  `json:"generated_text"` // TGI
	Details            *struct {
		GeneratedTokens int `json:"generated_tokens"`
	} `json:"details"`
	Data []struct { // OpenAI embeddings
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Embeddings []json.RawMessage `json:"embeddings"` // Ollama /api/embed
	Results    []struct {        // rerank
		Index          *int     `json:"index"`
		RelevanceScore *float64 `json:"relevance_score"`
	} `json:"results"`
	Error json.RawMessage `json:"error"`
}

// cachedTokens is what a whole response's usage said it served of the prompt from the
// server's prompt cache.
func (d *wholeDoc) cachedTokens() (int, bool) {
	u := &d.Usage
	var raws []json.RawMessage
	if p := u.PromptTokensDetails; p != nil {
		raws = append(raws, p.CachedTokens)
	}
	if p := u.InputTokensDetails; p != nil {
		raws = append(raws, p.CachedTokens)
	}
	for _, raw := range append(raws, u.PromptCacheHitTokens) {
		var f *float64 // nil for null
		if json.Unmarshal(raw, &f) == nil && f != nil && *f >= 0 && *f < math.MaxInt32 {
			return int(*f), true
		}
	}
	return 0, false
}

// whole fills rec from a response that came as one JSON document, which arrived at
// offset at: a generation's output as one token event, or an embeddings or rerank
// response checked against the request.
func (c *Client) whole(body []byte, at time.Duration, req workload.Request, rec *record.Record) {
	rec.Done = at
	var doc wholeDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		rec.Error = &record.Error{Kind: record.KindMalformedEvent,
			Message: c.message(fmt.Sprintf("the response is not the expected JSON document (%v): %s", err, excerpt(bytes.TrimSpace(body))))}
		return
	}
	if e := bytes.TrimSpace(doc.Error); len(e) > 0 && string(e) != "null" {
		rec.Error = &record.Error{Kind: record.KindStreamError, Message: c.message(ErrorMessage(body))}
		return
	}
	if doc.ID != "" {
		rec.ResponseID = doc.ID
	}
	prompt := max(doc.Usage.PromptTokens, doc.Usage.InputTokens, doc.PromptEvalCount, doc.TokensEvaluated)
	if prompt > 0 {
		rec.ServerPromptTokens = prompt
	}
	switch c.cfg.API {
	case APIOpenAIEmbeddings, APIOllamaEmbed:
		c.checkEmbeddings(&doc, req, rec)
		return
	case APIRerank:
		c.checkRerank(&doc, req, rec)
		return
	}
	if doc.Status == "failed" {
		rec.Error = &record.Error{Kind: record.KindStreamError, Message: "the response failed (status \"failed\")"}
		return
	}
	text, tool := doc.text(c.cfg.API)
	if c.cfg.SaveText {
		t := string(text)
		rec.Text = &t
	}
	n, src := max(doc.Usage.CompletionTokens, doc.Usage.OutputTokens, doc.EvalCount, doc.TokensPredicted), record.SourceUsage
	if doc.Details != nil && doc.Details.GeneratedTokens > 0 {
		n = doc.Details.GeneratedTokens
	}
	if n == 0 && len(text) > 0 {
		n, src = countText(c.tok, text), record.SourceTokenizer
		if c.tok == nil {
			src = record.SourceEvents
		}
	}
	if t := doc.Timings; t != nil {
		rec.Server = &record.ServerTimings{PromptTokens: t.PromptN, Prefill: msDuration(t.PromptMS),
			OutputTokens: t.PredictedN, Decode: msDuration(t.PredictedMS)}
		if t.CacheN != nil {
			setCached(rec, *t.CacheN, true)
		}
	} else if doc.EvalDuration > 0 || doc.PromptEvalDuration > 0 || doc.TotalDuration > 0 {
		rec.Server = &record.ServerTimings{PromptTokens: doc.PromptEvalCount, Prefill: msDuration(doc.PromptEvalDuration / 1e6),
			OutputTokens: doc.EvalCount, Decode: msDuration(doc.EvalDuration / 1e6), Total: msDuration(doc.TotalDuration / 1e6)}
	}
	if c, ok := doc.cachedTokens(); ok {
		setCached(rec, c, true) // usage's count, where the server gave both
	}
	if n == 0 {
		rec.Error = &record.Error{Kind: record.KindEmpty, Message: "the response carried no generated tokens"}
		return
	}
	rec.OutputTokens, rec.OutputTokensSource = n, src
	rec.Events.Append(at, n) // every token arrived with the document
	if len(tool) > 0 {
		rec.FirstToolCall = at
		rec.ToolCallTokens = int32(toolCallTokens(n, len(tool) == len(text), c.tok, tool, int(float64(n)*float64(len(tool))/float64(len(text))+0.5)))
	}
}

// toolCallTokens is how many of a response's n output tokens were its tool calls' (the
// functions' names and argument text): all n when all its text was, else the tokenizer's
// count of the calls' text, else (no tokenizer) estimate: a stream's tokens of the events
// that carried them, a whole response's n in proportion to the calls' share of its text's
// bytes. Never more than n.
func toolCallTokens(n int, all bool, tok tokenizer.Tokenizer, text []byte, estimate int) int {
	switch {
	case all:
		return n
	case tok != nil && len(text) > 0:
		return min(max(len(tok.Encode(string(text))), 1), n) // a call is at least a token
	}
	return min(max(estimate, 1), n)
}

// countText counts generated text with the tokenizer; without one, the text is one token.
func countText(tok tokenizer.Tokenizer, text []byte) int {
	if tok == nil {
		return 1
	}
	return max(len(tok.Encode(string(text))), 1)
}

// text is the generated text of a whole generation response, reasoning and tool calls
// included, and tool the tool calls' part of it (their names and arguments).
func (doc *wholeDoc) text(api string) (b, tool []byte) {
	add := func(s string) { b = append(b, s...) }
	addTool := func(t []byte) {
		b = append(b, t...)
		tool = append(tool, t...)
	}
	for _, ch := range doc.Choices {
		m := ch.Message
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			add(s)
		} else {
			var parts []struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(m.Content, &parts) == nil {
				for _, p := range parts {
					add(p.Text)
				}
			}
		}
		add(m.ReasoningContent)
		add(m.Reasoning)
		add(m.Refusal)
		addTool(toolCallText(m.ToolCalls))
		add(ch.Text)
	}
	for _, o := range doc.Output {
		for _, p := range o.Content {
			add(p.Text)
			add(p.Refusal)
		}
		for _, p := range o.Summary {
			add(p.Text)
		}
		if o.Type == "function_call" {
			addTool([]byte(o.Name + o.Arguments))
		} else {
			add(o.Arguments)
		}
	}
	var s string
	if json.Unmarshal(doc.Content, &s) == nil {
		add(s) // llama.cpp /completion
	} else {
		var blocks []struct {
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		}
		if json.Unmarshal(doc.Content, &blocks) == nil { // Anthropic
			for _, bl := range blocks {
				add(bl.Text)
				add(bl.Thinking)
			}
		}
	}
	if doc.Message != nil {
		add(doc.Message.Content)
		add(doc.Message.Thinking)
		addTool(toolCallText(doc.Message.ToolCalls))
	}
	add(doc.Response)
	add(doc.GeneratedText)
	return b, tool
}

// toolCallText is the generated text of a message's tool_calls (chattemplate.ToolCallsText).
func toolCallText(raw json.RawMessage) []byte { return []byte(chattemplate.ToolCallsText(raw)) }

// checkEmbeddings verifies that the response carries one vector per input, all of one
// dimension: anything else is a response_mismatch.
func (c *Client) checkEmbeddings(doc *wholeDoc, req workload.Request, rec *record.Record) {
	want := len(req.Batch)
	vecs := doc.Embeddings
	if c.cfg.API == APIOpenAIEmbeddings {
		vecs = make([]json.RawMessage, len(doc.Data))
		for i, d := range doc.Data {
			if d.Index < 0 || d.Index >= len(doc.Data) || vecs[d.Index] != nil {
				rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("embedding %d has index %d: indices must be 0..%d, each once", i, d.Index, len(doc.Data)-1)}
				return
			}
			vecs[d.Index] = d.Embedding
		}
	}
	if len(vecs) != want {
		rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("%d embeddings for %d inputs", len(vecs), want)}
		return
	}
	dim := -1
	for i, v := range vecs {
		n, err := vectorLen(v)
		if err != nil {
			rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("embedding %d: %v", i, err)}
			return
		}
		if n == 0 || (dim >= 0 && n != dim) {
			rec.Error = &record.Error{Kind: record.KindMismatch,
				Message: fmt.Sprintf("embedding %d has %d dimensions, embedding 0 has %d: the vectors of one batch must have one dimension > 0", i, n, max(dim, n))}
			return
		}
		dim = n
	}
}

// vectorLen is the dimension of an embedding: an array of numbers, or base64 float32s.
func vectorLen(v json.RawMessage) (int, error) {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return 0, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b)%4 != 0 {
			return 0, fmt.Errorf("not base64 float32s")
		}
		return len(b) / 4, nil
	}
	var f []float64
	if err := json.Unmarshal(v, &f); err != nil {
		return 0, fmt.Errorf("not an array of numbers")
	}
	return len(f), nil
}

// checkRerank verifies that the response scores every document once.
func (c *Client) checkRerank(doc *wholeDoc, req workload.Request, rec *record.Record) {
	want := len(req.Documents)
	seen := make([]bool, want)
	for i, r := range doc.Results {
		switch {
		case r.Index == nil:
			rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("result %d has no index", i)}
		case *r.Index < 0 || *r.Index >= want || seen[*r.Index]:
			rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("result %d has index %d: indices must be 0..%d, each once", i, *r.Index, want-1)}
		case r.RelevanceScore == nil:
			rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("result %d (document %d) has no relevance_score", i, *r.Index)}
		}
		if rec.Error != nil {
			return
		}
		seen[*r.Index] = true
	}
	if len(doc.Results) != want {
		rec.Error = &record.Error{Kind: record.KindMismatch, Message: fmt.Sprintf("%d scores for %d documents", len(doc.Results), want)}
	}
}
