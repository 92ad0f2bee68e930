package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig of GIF parts
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"strings"

	"github.com/llmbench/llmbench/internal/chattemplate"
)

// apiError is an OpenAI-style error response: {"error":{"message","type","param","code"}}.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func newAPIError(status int, typ, param, code, format string, args ...any) *apiError {
	e := &apiError{status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}

func badRequest(param, format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "invalid_request_error", param, "invalid_value", format, args...)
}

// errorBody renders e as the JSON body of an error response or error event.
func (e *apiError) body() []byte {
	b, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	return b
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(e.body())))
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body())
}

// The wire shape of the request fields the simulator honours. Other fields (temperature,
// top_p, user, …) are accepted and ignored, as a real server's sampling parameters would not
// change the timing being simulated.
type wireRequest struct {
	Model               *string         `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	MinTokens           *int64          `json:"min_tokens"`
	IgnoreEOS           *bool           `json:"ignore_eos"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         *bool `json:"include_usage"`
		ContinuousUsageStats *bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	N          *int64          `json:"n"`
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCalls are an assistant message's earlier tool calls (an agent's history): their
	// functions' names and arguments are the message's text as much as its content.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// text is the message's text: its content's, then its tool calls' (callsText).
func (m wireMessage) text(lim limits) (string, imageCount, error) {
	text, images, err := messageContent(m.Content, lim)
	return text + callsText(m.ToolCalls), images, err
}

// genRequest is a validated generation request.
type genRequest struct {
	chat            bool
	responses       bool // /v1/responses (chat is set too: the input is messages)
	stream          bool
	includeUsage    bool
	continuousUsage bool
	maxTokens       int
	ignoreEOS       bool
	promptTokens    int
	promptParts     []string // prompt text, for prefix hashes
	images          int      // image parts (their tokens are in promptTokens)
	// tools are the functions offered (chat, Responses); nil for none. Their definitions
	// cost no prompt tokens: the prompt is the conversation the client sized, which a
	// real server's template would lengthen by its rendering of them (docs/simulator.md).
	tools *toolSet
}

// limits are the request bounds decodeRequest enforces.
type limits struct {
	model            string
	maxTokens        int
	defaultMaxTokens int
	countTokens      func(string) int
	// chatTemplate, when set, formats chat and Responses conversations, which then count as
	// its formatting tokenized (as vLLM counts them), not as their texts' tokens.
	chatTemplate *chattemplate.Template
	// imagePatch and imageMerge are the vision encoder's patch side in pixels and merge
	// factor (imageTokens).
	imagePatch, imageMerge int
}

// messageTokens is a chat message's own tokens, which the prompt counts when no chat
// template counts the whole conversation (formatChat) instead; 0 with one, which saves
// tokenizing every message twice.
func (lim limits) messageTokens(text string) int {
	if lim.chatTemplate != nil {
		return 0
	}
	return lim.countTokens(text)
}

// formatChat counts conv as the chat template formats it, when the server has one: g's
// prompt is then the formatting's tokens plus imageTokens. A conversation the template
// refuses is a 400 naming param, as vLLM answers it.
func (lim limits) formatChat(g *genRequest, conv []chattemplate.Message, imageTokens int, param string) *apiError {
	if lim.chatTemplate == nil {
		return nil
	}
	text, err := lim.chatTemplate.Render(conv)
	if err != nil {
		return badRequest(param, "%v", err)
	}
	g.promptTokens = lim.countTokens(text) + imageTokens
	return nil
}

// decodeRequest parses and validates a /v1/chat/completions (chat) or /v1/completions body.
func decodeRequest(body []byte, chat bool, lim limits) (*genRequest, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(body, err)
	}
	g := &genRequest{chat: chat}
	if w.Model != nil && *w.Model != lim.model {
		return nil, newAPIError(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			"The model `%s` does not exist; this server serves `%s`.", *w.Model, lim.model)
	}
	if w.N != nil && *w.N != 1 {
		return nil, badRequest("n", "n = %d is not supported: the simulator generates one choice per request", *w.N)
	}
	if w.Stream != nil {
		g.stream = *w.Stream
	}
	if w.StreamOptions != nil {
		if !g.stream {
			return nil, badRequest("stream_options", "stream_options can only be given when stream is true")
		}
		// As in vLLM, per-chunk usage needs include_usage too.
		g.includeUsage = w.StreamOptions.IncludeUsage != nil && *w.StreamOptions.IncludeUsage
		g.continuousUsage = g.includeUsage && w.StreamOptions.ContinuousUsageStats != nil && *w.StreamOptions.ContinuousUsageStats
	}

	// max_completion_tokens supersedes the deprecated max_tokens on chat, as in OpenAI and vLLM.
	mt, param := w.MaxTokens, "max_tokens"
	if chat && w.MaxCompletionTokens != nil {
		mt, param = w.MaxCompletionTokens, "max_completion_tokens"
	}
	g.maxTokens = lim.defaultMaxTokens
	if mt != nil {
		switch {
		case *mt < 1:
			return nil, badRequest(param, "%s must be at least 1, got %d", param, *mt)
		case *mt > int64(lim.maxTokens):
			return nil, badRequest(param, "%s = %d exceeds this server's limit of %d", param, *mt, lim.maxTokens)
		}
		g.maxTokens = int(*mt)
	}
	if w.IgnoreEOS != nil {
		g.ignoreEOS = *w.IgnoreEOS
	}
	if w.MinTokens != nil {
		switch {
		case *w.MinTokens < 0:
			return nil, badRequest("min_tokens", "min_tokens must not be negative, got %d", *w.MinTokens)
		case *w.MinTokens > int64(g.maxTokens):
			return nil, badRequest("min_tokens", "min_tokens = %d exceeds max_tokens = %d", *w.MinTokens, g.maxTokens)
		case *w.MinTokens == int64(g.maxTokens):
			// The engine can only run to max_tokens or stop early; min == max pins the length.
			g.ignoreEOS = true
		}
	}

	if chat {
		if w.Prompt != nil {
			return nil, badRequest("prompt", "prompt is not a chat completions field; send messages")
		}
		if len(w.Messages) == 0 {
			return nil, badRequest("messages", "messages must be a non-empty array")
		}
		var aerr *apiError
		if g.tools, aerr = decodeTools(w.Tools, w.ToolChoice, false); aerr != nil {
			return nil, aerr
		}
		var conv []chattemplate.Message
		imageTokens := 0
		for i, m := range w.Messages {
			if m.Role == "" {
				return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
			}
			text, images, err := m.text(lim)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
			}
			g.promptParts = append(g.promptParts, text)
			g.promptTokens += lim.messageTokens(text) + images.tokens
			g.images += images.n
			imageTokens += images.tokens
			conv = append(conv, chattemplate.Message{Role: m.Role, Content: text})
		}
		if aerr := lim.formatChat(g, conv, imageTokens, "messages"); aerr != nil {
			return nil, aerr
		}
		// A chat template always adds tokens; never hand the engine an empty prompt.
		g.promptTokens = max(g.promptTokens, 1)
	} else {
		if w.Messages != nil {
			return nil, badRequest("messages", "messages is not a completions field; send prompt")
		}
		text, ids, err := promptValue(w.Prompt)
		if err != nil {
			return nil, badRequest("prompt", "prompt: %v", err)
		}
		if ids >= 0 {
			g.promptTokens = ids
		} else {
			g.promptParts = []string{text}
			g.promptTokens = lim.countTokens(text)
		}
		if g.promptTokens < 1 {
			return nil, badRequest("prompt", "prompt must not be empty")
		}
	}
	return g, nil
}

// jsonError turns a decoding error into a 400 naming the problem.
func jsonError(body []byte, err error) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		return badRequest("", "request body is empty; send a JSON object")
	case errors.As(err, &syn):
		return newAPIError(http.StatusBadRequest, "invalid_request_error", "", "invalid_json",
			"request body is not valid JSON (at byte %d): %v", syn.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return newAPIError(http.StatusBadRequest, "invalid_request_error", "", "invalid_type",
				"request body must be a JSON object, got %s", typ.Value)
		}
		return newAPIError(http.StatusBadRequest, "invalid_request_error", typ.Field, "invalid_type",
			"%s: expected %s, got %s", typ.Field, goTypeName(typ.Type.String()), typ.Value)
	}
	return newAPIError(http.StatusBadRequest, "invalid_request_error", "", "invalid_json", "request body: %v", err)
}

func goTypeName(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case t == "bool":
		return "a boolean"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	default:
		return "an object"
	}
}

// imageCount is what a message's images cost: how many, and their prompt tokens.
type imageCount struct{ n, tokens int }

// messageContent extracts the text of a message's content — a string, null (an assistant
// message with tool calls), or an array of parts whose text parts ("text", "input_text")
// are concatenated — and counts its image parts ("image_url" with {"url"}, "input_image"
// with a URL string): each must be a PNG, JPEG or GIF data URL, and costs the prompt tokens
// of imageTokens.
func messageContent(raw json.RawMessage, lim limits) (string, imageCount, error) {
	var ic imageCount
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", ic, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, ic, err
	case '[':
		var parts []struct {
			Type     string          `json:"type"`
			Text     *string         `json:"text"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", ic, fmt.Errorf("expected a string or an array of content parts: %v", err)
		}
		var b strings.Builder
		for i, p := range parts {
			switch p.Type {
			case "":
				return "", ic, fmt.Errorf("part %d has no type", i)
			case "text", "input_text":
				if p.Text == nil {
					return "", ic, fmt.Errorf("text part %d has no text", i)
				}
				b.WriteString(*p.Text)
			case "image_url", "input_image":
				n, err := imageTokens(p.ImageURL, lim)
				if err != nil {
					return "", ic, fmt.Errorf("image part %d: %v", i, err)
				}
				ic.n++
				ic.tokens += n
			}
		}
		return b.String(), ic, nil
	}
	return "", ic, fmt.Errorf("expected a string or an array of content parts, got %s", jsonKind(raw))
}

// imageTokens decodes an image part's URL ({"url": …} or the URL itself), which must be a
// base64 data URL of a PNG, JPEG or GIF image, and charges it as a vision encoder's output:
// ceil(W/P) × ceil(H/P) patches of P pixels, merged M × M into one token each.
func imageTokens(raw json.RawMessage, lim limits) (int, error) {
	var url string
	if err := json.Unmarshal(raw, &url); err != nil {
		var obj struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.URL == "" {
			return 0, errors.New(`image_url must be a URL or {"url": URL}`)
		}
		url = obj.URL
	}
	head, data, ok := strings.Cut(url, ",")
	if !ok || !strings.HasPrefix(head, "data:") || !strings.HasSuffix(head, ";base64") {
		return 0, errors.New("the simulator takes images as base64 data URLs (data:image/png;base64,…) only")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return 0, fmt.Errorf("the data URL is not valid base64: %v", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("not a PNG, JPEG or GIF image: %v", err)
	}
	p, m := lim.imagePatch, lim.imageMerge
	patches := ((cfg.Width + p - 1) / p) * ((cfg.Height + p - 1) / p)
	return max((patches+m*m-1)/(m*m), 1), nil
}

// promptValue reads a completions prompt: a string, a one-element array of strings, or token
// ids (an array of integers, or a one-element array of such arrays). ids is the token count
// when ids were given, else -1. Batched prompts are refused: the simulator returns one choice.
func promptValue(raw json.RawMessage) (text string, ids int, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", -1, errors.New("required")
	}
	switch raw[0] {
	case '"':
		err := json.Unmarshal(raw, &text)
		return text, -1, err
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return "", -1, err
		}
		if len(elems) == 0 {
			return "", -1, errors.New("must not be an empty array")
		}
		first := bytes.TrimSpace(elems[0])
		switch {
		case len(first) > 0 && (first[0] == '"' || first[0] == '['):
			if len(elems) != 1 {
				return "", -1, fmt.Errorf("%d prompts in one request are not supported; send one per request", len(elems))
			}
			return promptValue(first)
		default:
			var toks []int64
			if err := json.Unmarshal(raw, &toks); err != nil {
				return "", -1, errors.New("expected a string, an array of strings, or an array of token ids (integers)")
			}
			return "", len(toks), nil
		}
	}
	return "", -1, fmt.Errorf("expected a string or an array, got %s", jsonKind(raw))
}

func jsonKind(raw []byte) string {
	switch {
	case len(raw) == 0:
		return "nothing"
	case raw[0] == '{':
		return "an object"
	case raw[0] == 't' || raw[0] == 'f':
		return "a boolean"
	case raw[0] == 'n':
		return "null"
	default:
		return "a number"
	}
}
