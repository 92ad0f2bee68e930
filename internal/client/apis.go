package client

import (
	"net/http"
	"strings"

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
	// Ollama's native chat API: NDJSON; num_predict bounds the output (it has no ignore_eos).
	APIOllama: {
		path: "/api/chat", modelsPath: "/api/tags", accept: "application/x-ndjson", ndjson: true,
		auth:        bearer,
		static:      modelStream,
		requestKeys: []string{"messages", "options"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"messages": chatMessages(req)}
			if req.OutputTokens > 0 {
				m["options"] = map[string]any{"num_predict": req.OutputTokens}
			}
			return m
		},
		decode: (*decoder).decodeOllama,
	},
	APIOllamaGenerate: {
		path: "/api/generate", modelsPath: "/api/tags", accept: "application/x-ndjson", ndjson: true,
		auth:        bearer,
		static:      modelStream,
		requestKeys: []string{"prompt", "options"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"prompt": req.Prompt}
			if req.OutputTokens > 0 {
				m["options"] = map[string]any{"num_predict": req.OutputTokens}
			}
			return m
		},
		decode: (*decoder).decodeOllama,
	},
	// llama.cpp's native completion API: SSE without [DONE]; the last event has "stop":true
	// and the server's timings.
	APILlamaCpp: {
		path: "/completion", modelsPath: "/v1/models", accept: "text/event-stream",
		auth: bearer,
		static: func(cfg Config) map[string]any {
			m := modelStream(cfg)
			if cfg.IgnoreEOS {
				m["ignore_eos"] = true
			}
			return m
		},
		requestKeys: []string{"n_predict", "prompt"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"prompt": req.Prompt}
			if req.OutputTokens > 0 {
				m["n_predict"] = req.OutputTokens
			}
			return m
		},
		decode: (*decoder).decodeLlamaCpp,
	},
	// Hugging Face TGI's native streaming API; the last event carries "details".
	APITGI: {
		path: "/generate_stream", modelsPath: "/info", accept: "text/event-stream",
		auth:        bearer,
		static:      func(Config) map[string]any { return map[string]any{} },
		requestKeys: []string{"inputs", "parameters"},
		perRequest: func(req workload.Request) map[string]any {
			p := map[string]any{"details": true}
			if req.OutputTokens > 0 {
				p["max_new_tokens"] = req.OutputTokens
			}
			return map[string]any{"inputs": req.Prompt, "parameters": p}
		},
		decode: (*decoder).decodeTGI,
	},
	// Anthropic's Messages API: x-api-key and anthropic-version headers; max_tokens is
	// required; system messages go in the top-level "system" field.
	APIAnthropic: {
		path: "/v1/messages", modelsPath: "/v1/models", accept: "text/event-stream",
		headers:     map[string]string{"anthropic-version": "2023-06-01"},
		auth:        func(h http.Header, key string) { h.Set("x-api-key", key) },
		static:      modelStream,
		requestKeys: []string{"max_tokens", "system", "messages"},
		perRequest: func(req workload.Request) map[string]any {
			n := req.OutputTokens
			if n <= 0 {
				n = 4096
			}
			m := map[string]any{"max_tokens": n}
			var system []string
			var msgs []workload.Message
			for _, msg := range chatMessages(req) {
				if msg.Role == "system" {
					system = append(system, msg.Content)
					continue
				}
				msgs = append(msgs, msg)
			}
			if system != nil {
				m["system"] = strings.Join(system, "\n\n")
			}
			m["messages"] = msgs
			return m
		},
		decode: (*decoder).decodeAnthropic,
	},
}

// modelStream is the usual fixed part of a native body: the model and streaming on.
func modelStream(cfg Config) map[string]any {
	m := map[string]any{"stream": true}
	if cfg.Model != "" {
		m["model"] = cfg.Model
	}
	return m
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
