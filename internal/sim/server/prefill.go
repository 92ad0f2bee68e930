package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/sim"
)

// decodeResponsesRequest parses a /v1/responses body: input (a string, or messages whose
// content is a string or content parts), instructions, max_output_tokens, stream, ignore_eos.
func decodeResponsesRequest(body []byte, lim limits) (*genRequest, *apiError) {
	var w struct {
		Model           *string         `json:"model"`
		Input           json.RawMessage `json:"input"`
		Instructions    *string         `json:"instructions"`
		MaxOutputTokens *int64          `json:"max_output_tokens"`
		IgnoreEOS       *bool           `json:"ignore_eos"`
		Stream          *bool           `json:"stream"`
		Tools           json.RawMessage `json:"tools"`
		ToolChoice      json.RawMessage `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(body, err)
	}
	if w.Model != nil && *w.Model != lim.model {
		return nil, newAPIError(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			"The model `%s` does not exist; this server serves `%s`.", *w.Model, lim.model)
	}
	g := &genRequest{chat: true, responses: true, maxTokens: lim.defaultMaxTokens}
	g.stream = w.Stream != nil && *w.Stream
	g.ignoreEOS = w.IgnoreEOS != nil && *w.IgnoreEOS
	if mt := w.MaxOutputTokens; mt != nil {
		if *mt < 1 || *mt > int64(lim.maxTokens) {
			return nil, badRequest("max_output_tokens", "max_output_tokens must be 1..%d, got %d", lim.maxTokens, *mt)
		}
		g.maxTokens = int(*mt)
	}
	var aerr *apiError
	if g.tools, aerr = decodeTools(w.Tools, w.ToolChoice, true); aerr != nil {
		return nil, aerr
	}
	var conv []chattemplate.Message
	imageTokens := 0
	add := func(role, text string) {
		g.promptParts = append(g.promptParts, text)
		g.promptTokens += lim.messageTokens(text)
		conv = append(conv, chattemplate.Message{Role: role, Content: text})
	}
	if w.Instructions != nil {
		add("system", *w.Instructions)
	}
	raw := bytes.TrimSpace(w.Input)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("input", "input: %v", err)
		}
		add("user", s)
	case len(raw) > 0 && raw[0] == '[':
		var msgs []wireMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, badRequest("input", "input: expected a string or an array of messages: %v", err)
		}
		for i, m := range msgs {
			text, images, err := m.text(lim)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("input[%d].content", i), "input[%d].content: %v", i, err)
			}
			add(m.Role, text)
			g.promptTokens += images.tokens
			g.images += images.n
			imageTokens += images.tokens
		}
	default:
		return nil, badRequest("input", "input is required: a string or an array of messages")
	}
	if aerr := lim.formatChat(g, conv, imageTokens, "input"); aerr != nil {
		return nil, aerr
	}
	g.promptTokens = max(g.promptTokens, 1)
	return g, nil
}

// prefillDim is the dimension of the simulator's embeddings.
const prefillDim = 64

// handlePrefill serves /v1/embeddings and /v1/rerank (rerank): prefill-only work that the
// engine schedules beside generation, as one sequence of all the request's tokens (every
// input, or the query and every document) that ends with its prefill. The vectors and
// scores are deterministic in the inputs' order.
func (s *Server) handlePrefill(w http.ResponseWriter, r *http.Request, rerank bool) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	var in struct {
		Model     *string         `json:"model"`
		Input     json.RawMessage `json:"input"`
		Query     *string         `json:"query"`
		Documents []string        `json:"documents"`
		TopN      *int            `json:"top_n"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeAPIError(w, jsonError(body, err))
		return
	}
	if in.Model != nil && *in.Model != s.lim.model {
		writeAPIError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			"The model `%s` does not exist; this server serves `%s`.", *in.Model, s.lim.model))
		return
	}
	var texts []string
	if rerank {
		if in.Query == nil || len(in.Documents) == 0 {
			writeAPIError(w, badRequest("documents", "rerank needs a query and a non-empty documents array"))
			return
		}
		texts = append([]string{*in.Query}, in.Documents...)
	} else {
		raw := bytes.TrimSpace(in.Input)
		if len(raw) > 0 && raw[0] == '"' {
			var one string
			_ = json.Unmarshal(raw, &one)
			texts = []string{one}
		} else if err := json.Unmarshal(raw, &texts); err != nil || len(texts) == 0 {
			writeAPIError(w, badRequest("input", "input must be a string or a non-empty array of strings"))
			return
		}
	}
	tokens := 0
	for _, t := range texts {
		tokens += max(s.lim.countTokens(t), 1)
	}
	n := s.seq.Add(1)
	steps, err := s.g.Submit(r.Context(), sim.SeqRequest{ID: "prefill-" + strconv.FormatUint(n, 16), PromptTokens: tokens, MaxTokens: 1, IgnoreEOS: true})
	if err != nil {
		if errors.Is(err, sim.ErrStopped) {
			writeAPIError(w, newAPIError(http.StatusServiceUnavailable, "server_error", "", "engine_stopped", "the engine is shutting down"))
			return
		}
		writeAPIError(w, badRequest("", "the engine refused the request: %v", err))
		return
	}
	for st := range steps { // the one step that ends the prefill
		if st.Done {
			break
		}
	}
	if r.Context().Err() != nil {
		return
	}
	b := append(make([]byte, 0, 256), `{"object":"list","model":`...)
	b = append(b, s.modelJSON...)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, '}')
	seed := splitmix64(uint64(s.opts.Seed) ^ n)
	if rerank {
		b = append(b, `,"results":[`...)
		for i := range in.Documents {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"relevance_score":`...)
			b = strconv.AppendFloat(b, unit(seed, uint64(i)), 'f', 6, 64)
			b = append(b, '}')
		}
	} else {
		b = append(b, `,"data":[`...)
		for i := range texts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"object":"embedding","index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"embedding":[`...)
			for k := range prefillDim {
				if k > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, 2*unit(seed, uint64(i*prefillDim+k))-1, 'f', 6, 64)
			}
			b = append(b, "]}"...)
		}
	}
	b = append(b, "]}"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// unit is a deterministic number in [0, 1).
func unit(seed, i uint64) float64 {
	return float64(splitmix64(seed^splitmix64(i))>>11) / (1 << 53) * (1 - math.SmallestNonzeroFloat64)
}
