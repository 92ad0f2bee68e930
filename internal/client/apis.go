package client

import (
	"net/http"

	"github.com/llmbench/llmbench/internal/workload"
)

// apiSpec is everything that differs between APIs: where to send, how to build the body,
// how the stream is framed and how one event is decoded.
type apiSpec struct {
	path       string // streaming endpoint, appended to the base URL
	modelsPath string // model listing
	accept     string
	ndjson     bool              // newline-delimited JSON instead of SSE
	headers    map[string]string // fixed headers the API requires
	auth       func(h http.Header, key string)
	// static returns the body fields that are the same for every request.
	static func(cfg Config) map[string]any
	// requestKeys are the top-level keys perRequest sets, in body order.
	requestKeys []string
	perRequest  func(req workload.Request) map[string]any
	decode      func(d *decoder, data, event []byte) error
}

var apiSpecs = map[string]*apiSpec{
	APIOpenAIChat: {
		path: "/v1/chat/completions", modelsPath: "/v1/models", accept: "text/event-stream",
		auth:        bearer,
		static:      openAIStatic,
		requestKeys: []string{"max_tokens", "messages"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"messages": chatMessages(req)}
			if req.OutputTokens > 0 {
				m["max_tokens"] = req.OutputTokens
			}
			return m
		},
		decode: (*decoder).decodeOpenAI,
	},
	APIOpenAICompletions: {
		path: "/v1/completions", modelsPath: "/v1/models", accept: "text/event-stream",
		auth:        bearer,
		static:      openAIStatic,
		requestKeys: []string{"max_tokens", "prompt"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"prompt": req.Prompt}
			if req.OutputTokens > 0 {
				m["max_tokens"] = req.OutputTokens
			}
			return m
		},
		decode: (*decoder).decodeOpenAI,
	},
}

func bearer(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }

// openAIStatic: only max_tokens bounds the output (Ollama ignores max_completion_tokens
// and would generate without end), and include_usage asks for the server's token count.
func openAIStatic(cfg Config) map[string]any {
	m := map[string]any{
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if cfg.Model != "" {
		m["model"] = cfg.Model
	}
	if cfg.IgnoreEOS {
		m["ignore_eos"] = true
	}
	return m
}

// chatMessages is the request's conversation, or its prompt as one user message.
func chatMessages(req workload.Request) []workload.Message {
	if req.Messages != nil {
		return req.Messages
	}
	return []workload.Message{{Role: "user", Content: req.Prompt}}
}
