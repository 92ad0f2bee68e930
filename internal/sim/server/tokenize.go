package server

import (
	"encoding/json"
	"net/http"

	"github.com/llmbench/llmbench/internal/chattemplate"
)

// tokenizeRequest is vLLM's /tokenize body (prompt, or chat messages) with llama.cpp's
// field name (content) accepted too.
type tokenizeRequest struct {
	Model    *string          `json:"model"`
	Prompt   *json.RawMessage `json:"prompt"`
	Content  *json.RawMessage `json:"content"`
	Messages []wireMessage    `json:"messages"`
}

type detokenizeRequest struct {
	Model  *string `json:"model"`
	Tokens []int   `json:"tokens"`
}

// handleTokenize answers POST /tokenize ({"prompt": text} or {"content": text} or
// {"messages": [...]} -> {"tokens": [...], "count": n}) and POST /detokenize
// ({"tokens": [...]} -> {"prompt": text, "content": text}: vLLM's and llama.cpp's
// names), with the server's tokenizer. Special tokens are never added, so /tokenize's
// count is the usage.prompt_tokens the server reports for that prompt (chat messages are
// formatted by the chat template when the server has one, else encoded one by one, as
// generation counts them).
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request, tokenize bool) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	var model *string
	var out any
	if tokenize {
		var req tokenizeRequest
		if err := json.Unmarshal(body, &req); err != nil {
			writeAPIError(w, jsonError(body, err))
			return
		}
		model = req.Model
		texts, aerr := tokenizeTexts(req, s.lim)
		if aerr != nil {
			writeAPIError(w, aerr)
			return
		}
		ids := []int{}
		for _, t := range texts {
			ids = append(ids, s.opts.Tokenizer.Encode(t)...)
		}
		out = struct {
			Count  int   `json:"count"`
			Tokens []int `json:"tokens"`
		}{len(ids), ids}
	} else {
		var req detokenizeRequest
		if err := json.Unmarshal(body, &req); err != nil {
			writeAPIError(w, jsonError(body, err))
			return
		}
		if req.Tokens == nil {
			writeAPIError(w, badRequest("tokens", "tokens is required: an array of token ids"))
			return
		}
		model = req.Model
		text := s.opts.Tokenizer.Decode(req.Tokens)
		out = struct {
			Prompt  string `json:"prompt"`
			Content string `json:"content"`
		}{text, text}
	}
	if model != nil && *model != s.opts.ModelName {
		writeAPIError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			"The model `%s` does not exist; this server serves `%s`.", *model, s.opts.ModelName))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// tokenizeTexts are the texts a /tokenize request names: its prompt, or each message's
// (text parts only: an image's prompt tokens have no ids).
func tokenizeTexts(req tokenizeRequest, lim limits) ([]string, *apiError) {
	raw, param := req.Prompt, "prompt"
	if raw == nil {
		raw, param = req.Content, "content"
	}
	switch {
	case raw != nil && req.Messages != nil:
		return nil, badRequest("messages", "give either prompt (or content) or messages, not both")
	case raw != nil:
		var text string
		if err := json.Unmarshal(*raw, &text); err != nil {
			return nil, badRequest(param, "%s: expected a string", param)
		}
		return []string{text}, nil
	case req.Messages != nil:
		texts := make([]string, len(req.Messages))
		conv := make([]chattemplate.Message, len(req.Messages))
		for i, m := range req.Messages {
			t, _, err := m.text(lim)
			if err != nil {
				return nil, badRequest("messages", "messages[%d].content: %v", i, err)
			}
			texts[i] = t
			conv[i] = chattemplate.Message{Role: m.Role, Content: t}
		}
		if lim.chatTemplate != nil {
			// Formatted as generation formats them, so the count is prompt_tokens' (vLLM).
			text, err := lim.chatTemplate.Render(conv)
			if err != nil {
				return nil, badRequest("messages", "%v", err)
			}
			return []string{text}, nil
		}
		return texts, nil
	}
	return nil, badRequest("prompt", "prompt is required (vLLM's name; llama.cpp's content is accepted too), or messages")
}
