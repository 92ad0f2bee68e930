package client

import (
	"bytes"
	"errors"
)

// chunkInfo is what one stream event (an SSE event or an NDJSON line) says, in the few
// fields the measurement needs. Decoders fill it; the stream loop acts on it.
type chunkInfo struct {
	id         []byte // the response id (escaped form), when the chunk carries one
	tokens     bool   // carries generated text: content, reasoning, refusal or tool-call text
	content    bool   // carries answer text (anything but reasoning)
	tool       bool   // carries tool-call text: a function's name or argument text
	other      bool   // carries text that is not a tool call's
	finish     bool   // a finish/stop reason was given
	done       bool   // the API's end-of-stream marker ([DONE], message_stop, "done": true)
	hasUsage   bool   // a usage object with a non-zero completion count
	completion int    // cumulative generated tokens per the server
	prompt     int    // prompt tokens per the server
	cached     int    // prompt tokens the server served from its prompt cache, per usage, when hasCached
	hasCached  bool
	streamErr  bool   // an error event
	errMsg     []byte // its message (decoded)
	timings    serverTimings
}

// serverTimings are the server's own figures for the request, when it reports them.
type serverTimings struct {
	set         bool
	promptN     int // prompt tokens actually evaluated (after cache)
	cacheN      int // prompt tokens served from the prompt cache (llama.cpp cache_n), when hasCache
	hasCache    bool
	promptMS    float64 // prefill time
	predictedN  int     // generated tokens
	predictedMS float64 // decode time
	queueMS     float64 // time queued before prefill (TGI)
	totalMS     float64 // the server's end-to-end time
}

// decoder holds the per-stream decoding state; one per request, reused through a pool.
type decoder struct {
	s    jscan
	keep bool   // keep the generated text (a tokenizer will count it)
	text []byte // generated text so far, when keep
	tool []byte // the tool calls' part of it, when keep
	ci   chunkInfo
}

func (d *decoder) begin() {
	d.ci = chunkInfo{}
}

// addText notes generated text in escaped form.
func (d *decoder) addText(raw []byte, content bool) {
	if len(raw) == 0 {
		return
	}
	d.ci.tokens, d.ci.other = true, true
	if content {
		d.ci.content = true
	}
	if d.keep {
		d.text = appendUnescaped(d.text, raw)
	}
}

// addTool notes tool-call text (a function's name, argument text) in escaped form: answer
// text that is also the call's.
func (d *decoder) addTool(raw []byte) {
	if len(raw) == 0 {
		return
	}
	d.ci.tokens, d.ci.content, d.ci.tool = true, true, true
	if d.keep {
		n := len(d.text)
		d.text = appendUnescaped(d.text, raw)
		d.tool = append(d.tool, d.text[n:]...)
	}
}

// addCount handles a completion count: 0 is ignored because Ollama's completions
// endpoint streams zeros on every chunk before the real usage (take the last non-zero).
func (d *decoder) addCount(completion, prompt int) {
	if completion > 0 {
		d.ci.hasUsage = true
		d.ci.completion = completion
	}
	if prompt > 0 {
		d.ci.prompt = prompt
	}
}

// errorValue reads an error member: an object with "message", a string, or anything else
// (kept raw).
func (d *decoder) errorValue() {
	s := &d.s
	d.ci.streamErr = true
	switch s.peek() {
	case '{':
		start := s.i
		s.obj()
		first := true
		var msg []byte
		for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
			if string(k) == "message" && s.peek() == '"' {
				msg, _ = s.str()
				continue
			}
			s.skip()
		}
		if msg != nil {
			d.ci.errMsg = appendUnescaped(d.ci.errMsg[:0], msg)
		} else if s.err == nil {
			d.ci.errMsg = append(d.ci.errMsg[:0], s.b[start:s.i]...)
		}
	case '"':
		raw, _ := s.str()
		d.ci.errMsg = appendUnescaped(d.ci.errMsg[:0], raw)
	default:
		d.ci.errMsg = append(d.ci.errMsg[:0], s.rawValue()...)
	}
}

// openObject starts scanning data, which must be a JSON object, and enters it.
func (d *decoder) openObject(data []byte) (*jscan, error) {
	s := &d.s
	s.reset(data)
	if s.peek() != '{' {
		s.skip()
		if s.err != nil {
			return nil, s.err
		}
		return nil, errNotObject
	}
	s.obj()
	return s, nil
}

var errNotObject = errors.New("event data is not a JSON object")

// decodeOpenAI decodes one chunk of /v1/chat/completions or /v1/completions.
func (d *decoder) decodeOpenAI(data, event []byte) error {
	d.begin()
	if isDoneMarker(data) {
		d.ci.done = true
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 && string(event) != "error" {
		return nil // an empty data line carries nothing (some proxies send them as keep-alives)
	}
	if string(event) == "error" {
		// openai-python treats "event: error" as an error whatever the data says.
		d.ci.streamErr = true
		d.ci.errMsg = append(d.ci.errMsg[:0], data...)
		d.s.reset(data)
		if d.s.peek() == '{' {
			d.s.obj()
			first := true
			for k, ok := d.s.member(&first); ok; k, ok = d.s.member(&first) {
				if string(k) == "error" && !d.s.null() {
					d.errorValue()
					continue
				}
				d.s.skip()
			}
		}
		return nil
	}
	s, err := d.openObject(data)
	if err != nil {
		return err
	}
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "id":
			d.ci.id, _ = s.optStr()
		case "choices":
			d.openAIChoices()
		case "usage":
			d.openAIUsage()
		case "error":
			d.errorMember()
		case "timings":
			d.llamaTimings()
		default:
			s.skip()
		}
	}
	return s.close()
}

// errorMember reads an "error" member's value: null is no error, anything else is the
// stream's error event.
func (d *decoder) errorMember() {
	if !d.s.null() {
		d.errorValue()
	}
}

func isDoneMarker(data []byte) bool {
	return bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]"))
}

// openAIUsage reads a usage object: completion_tokens and prompt_tokens, or the Responses
// API's output_tokens and input_tokens; and the prompt tokens served from the server's
// prompt cache: prompt_tokens_details.cached_tokens (OpenAI, vLLM with
// --enable-prompt-tokens-details, SGLang with --enable-cache-report, llama.cpp),
// input_tokens_details.cached_tokens (Responses), or DeepSeek's prompt_cache_hit_tokens.
func (d *decoder) openAIUsage() {
	s := &d.s
	if !s.obj() {
		return
	}
	first := true
	completion, prompt := 0, 0
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "completion_tokens", "output_tokens":
			completion = s.int()
		case "prompt_tokens", "input_tokens":
			prompt = s.int()
		case "prompt_tokens_details", "input_tokens_details":
			d.tokensDetails()
		case "prompt_cache_hit_tokens":
			d.cachedCount()
		default:
			s.skip()
		}
	}
	d.addCount(completion, prompt)
}

// tokensDetails reads usage's prompt_tokens_details (input_tokens_details): its
// cached_tokens. null, the object or the count, says nothing: vLLM and SGLang leave it out
// (or null) when nothing was cached or they were not asked to report it.
func (d *decoder) tokensDetails() {
	s := &d.s
	if !s.obj() {
		return
	}
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		if string(k) == "cached_tokens" {
			d.cachedCount()
			continue
		}
		s.skip()
	}
}

// cachedCount reads a count of prompt tokens served from the prompt cache; anything but a
// non-negative number says nothing.
func (d *decoder) cachedCount() {
	s := &d.s
	if !s.isNum() {
		return
	}
	if n := s.int(); n >= 0 {
		d.ci.cached, d.ci.hasCached = n, true
	}
}

func (d *decoder) openAIChoices() {
	s := &d.s
	if !s.arr() {
		return
	}
	first := true
	for s.elem(&first) {
		if !s.obj() {
			continue
		}
		f := true
		for k, ok := s.member(&f); ok; k, ok = s.member(&f) {
			switch string(k) {
			case "delta":
				d.openAIDelta()
			case "text":
				raw, _ := s.optStr()
				d.addText(raw, true)
			case "finish_reason":
				if raw, _ := s.optStr(); len(raw) > 0 {
					d.ci.finish = true
				}
			default:
				s.skip()
			}
		}
	}
}

func (d *decoder) openAIDelta() {
	s := &d.s
	if !s.obj() {
		return
	}
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "content", "refusal":
			// A string, or (some servers) an array of content parts with "text".
			if s.peek() == '[' {
				d.contentParts()
				continue
			}
			raw, _ := s.optStr()
			d.addText(raw, true)
		case "reasoning_content", "reasoning":
			raw, _ := s.optStr()
			d.addText(raw, false)
		case "tool_calls":
			d.toolCalls()
		default:
			s.skip()
		}
	}
}

func (d *decoder) contentParts() {
	s := &d.s
	s.arr()
	first := true
	for s.elem(&first) {
		if !s.obj() {
			continue
		}
		f := true
		for k, ok := s.member(&f); ok; k, ok = s.member(&f) {
			if string(k) == "text" {
				raw, _ := s.optStr()
				d.addText(raw, true)
				continue
			}
			s.skip()
		}
	}
}

// toolCalls counts the model-generated parts of tool-call deltas, OpenAI's
// delta.tool_calls[i] {index, id, type, function{name, arguments}}: the function's name
// (in the call's first delta) and its argument text, which streams in pieces. The index
// and id place a piece in a call; they are the server's, not generated text.
func (d *decoder) toolCalls() {
	s := &d.s
	if !s.arr() {
		return
	}
	first := true
	for s.elem(&first) {
		if !s.obj() {
			continue
		}
		f := true
		for k, ok := s.member(&f); ok; k, ok = s.member(&f) {
			if string(k) != "function" || !s.obj() {
				if string(k) != "function" {
					s.skip()
				}
				continue
			}
			ff := true
			for k2, ok2 := s.member(&ff); ok2; k2, ok2 = s.member(&ff) {
				switch string(k2) {
				case "name", "arguments":
					raw, _ := s.optStr()
					d.addTool(raw)
				default:
					s.skip()
				}
			}
		}
	}
}

// llamaTimings reads llama.cpp's "timings" object.
func (d *decoder) llamaTimings() {
	s := &d.s
	if !s.obj() {
		return
	}
	t := &d.ci.timings
	t.set = true
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "prompt_n":
			t.promptN = s.int()
		case "cache_n":
			t.cacheN, t.hasCache = s.int(), true
		case "prompt_ms":
			t.promptMS = s.float()
		case "predicted_n":
			t.predictedN = s.int()
		case "predicted_ms":
			t.predictedMS = s.float()
		default:
			s.skip()
		}
	}
}
