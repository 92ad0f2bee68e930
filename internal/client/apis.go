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
	// unstreamed APIs answer with one JSON document (embeddings, rerank); the others do so
	// with --stream=false, at wholePath when it differs from path.
	unstreamed bool
	wholePath  string
	// end names the event that ends a complete stream, for the message of one that ended
	// without it.
	end string
	// templated: the server formats the request's conversation (or, for Ollama's generate,
	// its prompt) with the model's chat template before counting and prefilling it.
	templated bool
}

// AppliesChatTemplate reports whether the server formats api's requests with the model's
// chat template, so their prompt tokens include the template's.
func AppliesChatTemplate(api string) bool {
	s, ok := apiSpecs[api]
	return ok && s.templated
}

// ChatTemplateAPIs lists the APIs AppliesChatTemplate holds for.
func ChatTemplateAPIs() []string {
	var out []string
	for _, a := range APIs() {
		if AppliesChatTemplate(a) {
			out = append(out, a)
		}
	}
	return out
}

var apiSpecs = map[string]*apiSpec{
	APIOpenAIChat: {
		templated: true,
		path:      "/v1/chat/completions", modelsPath: "/v1/models", accept: "text/event-stream",
		auth:        bearer,
		static:      openAIStatic,
		requestKeys: []string{"max_tokens", "messages", "tools", "tool_choice"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"messages": chatInput(req, false)}
			if req.OutputTokens > 0 {
				m["max_tokens"] = req.OutputTokens
			}
			addTools(m, req, chatTool, chatToolChoice)
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
	// OpenAI's Responses API: typed events, usage in response.completed, no [DONE].
	APIOpenAIResponses: {
		templated: true,
		path:      "/v1/responses", modelsPath: "/v1/models", accept: "text/event-stream",
		auth:        bearer,
		static:      modelStreamEOS,
		requestKeys: []string{"max_output_tokens", "input", "tools", "tool_choice"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"input": chatInput(req, true)}
			if req.OutputTokens > 0 {
				m["max_output_tokens"] = req.OutputTokens
			}
			addTools(m, req, responsesTool, responsesToolChoice)
			return m
		},
		decode: (*decoder).decodeResponses,
		end:    "response.completed",
	},
	// Embeddings: --batch-size inputs per request, one vector each.
	APIOpenAIEmbeddings: {
		path: "/v1/embeddings", modelsPath: "/v1/models", accept: "application/json", unstreamed: true,
		auth: bearer,
		static: func(cfg Config) map[string]any {
			m := modelOnly(cfg)
			m["encoding_format"] = "float"
			return m
		},
		requestKeys: []string{"input"},
		perRequest:  func(req workload.Request) map[string]any { return map[string]any{"input": batchOf(req)} },
	},
	APIOllamaEmbed: {
		path: "/api/embed", modelsPath: "/api/tags", accept: "application/json", unstreamed: true,
		auth:        bearer,
		static:      modelOnly,
		requestKeys: []string{"input"},
		perRequest:  func(req workload.Request) map[string]any { return map[string]any{"input": batchOf(req)} },
	},
	// Rerank (the Jina/Cohere shape vLLM and llama.cpp serve): a query and --documents
	// documents, one relevance score each.
	APIRerank: {
		path: "/v1/rerank", modelsPath: "/v1/models", accept: "application/json", unstreamed: true,
		auth:        bearer,
		static:      modelOnly,
		requestKeys: []string{"query", "documents", "top_n"},
		perRequest: func(req workload.Request) map[string]any {
			docs := req.Documents
			if docs == nil {
				docs = []string{}
			}
			return map[string]any{"query": req.Query, "documents": docs, "top_n": len(docs)}
		},
	},
	// Ollama's native chat API: NDJSON; num_predict bounds the output (it has no ignore_eos).
	APIOllama: {
		templated: true,
		path:      "/api/chat", modelsPath: "/api/tags", accept: "application/x-ndjson", ndjson: true,
		auth:        bearer,
		static:      modelStream,
		requestKeys: []string{"messages", "tools", "options"},
		perRequest: func(req workload.Request) map[string]any {
			m := map[string]any{"messages": chatMessages(req)}
			if req.OutputTokens > 0 {
				m["options"] = map[string]any{"num_predict": req.OutputTokens}
			}
			// Ollama's chat takes tools in chat completions' shape and has no tool_choice.
			addTools(m, req, chatTool, nil)
			return m
		},
		decode: (*decoder).decodeOllama,
	},
	APIOllamaGenerate: {
		templated: true,
		path:      "/api/generate", modelsPath: "/api/tags", accept: "application/x-ndjson", ndjson: true,
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
		auth:        bearer,
		static:      modelStreamEOS,
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
		path: "/generate_stream", wholePath: "/generate", modelsPath: "/info", accept: "text/event-stream",
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
		templated: true,
		path:      "/v1/messages", modelsPath: "/v1/models", accept: "text/event-stream",
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

// modelStream is the usual fixed part of a native body: the model and streaming on (off
// with --stream=false).
func modelStream(cfg Config) map[string]any {
	m := modelOnly(cfg)
	m["stream"] = !cfg.NoStream
	return m
}

// modelStreamEOS is modelStream with ignore_eos when asked for.
func modelStreamEOS(cfg Config) map[string]any {
	m := modelStream(cfg)
	if cfg.IgnoreEOS {
		m["ignore_eos"] = true
	}
	return m
}

// modelOnly is the model, when known.
func modelOnly(cfg Config) map[string]any {
	m := map[string]any{}
	if cfg.Model != "" {
		m["model"] = cfg.Model
	}
	return m
}

// batchOf is an embeddings request's inputs: its batch, or its prompt alone.
func batchOf(req workload.Request) []string {
	if req.Batch != nil {
		return req.Batch
	}
	return []string{req.Prompt}
}

func bearer(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }

// openAIStatic: only max_tokens bounds the output (Ollama ignores max_completion_tokens
// and would generate without end), and include_usage asks for the server's token count.
func openAIStatic(cfg Config) map[string]any {
	m := modelStream(cfg)
	if !cfg.NoStream {
		m["stream_options"] = map[string]any{"include_usage": true}
	}
	if cfg.IgnoreEOS {
		m["ignore_eos"] = true
	}
	return m
}

// chatInput is the conversation of the chat APIs: chatMessages, with the request's images
// as content parts after the last user message's text, in OpenAI's shape: image_url parts
// for chat completions, input_text and input_image parts for the Responses API.
func chatInput(req workload.Request, responses bool) any {
	msgs := chatMessages(req)
	if len(req.Images) == 0 {
		return msgs
	}
	out := make([]map[string]any, len(msgs))
	last := len(msgs) - 1
	for i, m := range msgs {
		out[i] = map[string]any{"role": m.Role, "content": m.Content}
		if m.Role == "user" {
			last = i
		}
	}
	text := map[string]any{"type": "text", "text": msgs[last].Content}
	if responses {
		text["type"] = "input_text"
	}
	parts := []any{text}
	for _, im := range req.Images {
		if responses {
			parts = append(parts, map[string]any{"type": "input_image", "image_url": im.URL})
		} else {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": im.URL}})
		}
	}
	out[last]["content"] = parts
	return out
}

// chatMessages is the request's conversation, or its prompt as one user message.
func chatMessages(req workload.Request) []workload.Message {
	if req.Messages != nil {
		return req.Messages
	}
	return []workload.Message{{Role: "user", Content: req.Prompt}}
}

// ToolAPIs are the APIs whose requests can offer tools (workload.Request.Tools).
var ToolAPIs = []string{APIOpenAIChat, APIOpenAIResponses, APIOllama}

// ToolChoiceAPIs are those of ToolAPIs that take a tool_choice.
var ToolChoiceAPIs = []string{APIOpenAIChat, APIOpenAIResponses}

// addTools sets m's tools, in an API's shape (tool), and its tool_choice (choice; nil for an
// API without one) when the request offers any.
func addTools(m map[string]any, req workload.Request, tool func(workload.ToolDef) map[string]any,
	choice func(workload.ToolChoice) any) {
	if len(req.Tools) == 0 {
		return
	}
	ts := make([]map[string]any, len(req.Tools))
	for i, t := range req.Tools {
		ts[i] = tool(t)
	}
	m["tools"] = ts
	if choice != nil && req.ToolChoice != "" {
		m["tool_choice"] = choice(req.ToolChoice)
	}
}

// function is a definition's fields common to both shapes.
func function(t workload.ToolDef) map[string]any {
	f := map[string]any{"name": t.Name}
	if t.Description != "" {
		f["description"] = t.Description
	}
	if t.Parameters != nil {
		f["parameters"] = t.Parameters
	}
	return f
}

// chatTool is chat completions' nested shape: {"type":"function","function":{name,...}}.
func chatTool(t workload.ToolDef) map[string]any {
	return map[string]any{"type": "function", "function": function(t)}
}

// responsesTool is the Responses API's flat shape: {"type":"function","name",...}.
func responsesTool(t workload.ToolDef) map[string]any {
	f := function(t)
	f["type"] = "function"
	return f
}

func chatToolChoice(c workload.ToolChoice) any {
	if f := c.Function(); f != "" {
		return map[string]any{"type": "function", "function": map[string]any{"name": f}}
	}
	return string(c)
}

func responsesToolChoice(c workload.ToolChoice) any {
	if f := c.Function(); f != "" {
		return map[string]any{"type": "function", "name": f}
	}
	return string(c)
}
