package client

// Decoders of the native (non-OpenAI) streaming APIs. Each fills chunkInfo from one event
// with the same allocation-free scanner as the OpenAI decoder.

// decodeOllama decodes one NDJSON line of Ollama's /api/chat or /api/generate:
// {"message":{"content":"…","thinking":"…"}|"response":"…","done":false}, and a final line
// with "done":true, done_reason, eval_count, eval_duration (ns), prompt_eval_count,
// prompt_eval_duration (ns) and total_duration (ns).
func (d *decoder) decodeOllama(data, _ []byte) error {
	d.begin()
	s, err := d.openObject(data)
	if err != nil {
		return err
	}
	t := &d.ci.timings
	evalCount, promptCount := 0, 0
	var evalNS, promptNS, totalNS float64
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "message":
			if !s.obj() {
				continue
			}
			f := true
			for k2, ok2 := s.member(&f); ok2; k2, ok2 = s.member(&f) {
				switch string(k2) {
				case "content":
					raw, _ := s.optStr()
					d.addText(raw, true)
				case "thinking":
					raw, _ := s.optStr()
					d.addText(raw, false)
				case "tool_calls":
					d.ollamaToolCalls()
				default:
					s.skip()
				}
			}
		case "response":
			raw, _ := s.optStr()
			d.addText(raw, true)
		case "thinking":
			raw, _ := s.optStr()
			d.addText(raw, false)
		case "done":
			d.ci.done = s.bool()
		case "done_reason":
			if raw, _ := s.optStr(); len(raw) > 0 {
				d.ci.finish = true
			}
		case "eval_count":
			evalCount = s.int()
		case "prompt_eval_count":
			promptCount = s.int()
		case "eval_duration":
			evalNS = s.float()
		case "prompt_eval_duration":
			promptNS = s.float()
		case "total_duration":
			totalNS = s.float()
		case "error":
			d.errorMember()
		default:
			s.skip()
		}
	}
	if err := s.close(); err != nil {
		return err
	}
	d.addCount(evalCount, promptCount)
	if evalNS > 0 || promptNS > 0 || totalNS > 0 {
		*t = serverTimings{set: true, promptN: promptCount, promptMS: promptNS / 1e6,
			predictedN: evalCount, predictedMS: evalNS / 1e6, totalMS: totalNS / 1e6}
	}
	return nil
}

// ollamaToolCalls reads Ollama's message.tool_calls, which arrive whole in one line, not
// streamed: [{"function":{"index":0,"name":"…","arguments":{…}}}]. The generated text is
// each call's name and its arguments, an object (not a string as in OpenAI's API), counted
// as the JSON text the model wrote.
func (d *decoder) ollamaToolCalls() {
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
			if string(k) != "function" {
				s.skip()
				continue
			}
			if !s.obj() {
				continue
			}
			ff := true
			for k2, ok2 := s.member(&ff); ok2; k2, ok2 = s.member(&ff) {
				switch string(k2) {
				case "name":
					raw, _ := s.optStr()
					d.addTool(raw)
				case "arguments":
					if s.peek() == '"' { // a server that sends them as a string, as OpenAI does
						raw, _ := s.optStr()
						d.addTool(raw)
						continue
					}
					d.addToolJSON(s.rawValue())
				default:
					s.skip()
				}
			}
		}
	}
}

// addToolJSON notes tool-call text that came as a JSON value (Ollama's arguments object),
// kept as its JSON text.
func (d *decoder) addToolJSON(raw []byte) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	d.ci.tokens, d.ci.content, d.ci.tool = true, true, true
	if d.keep {
		d.text = append(d.text, raw...)
		d.tool = append(d.tool, raw...)
	}
}

// decodeLlamaCpp decodes one SSE event of llama.cpp's native /completion:
// {"content":"…","stop":false,"tokens_predicted":n,"tokens_evaluated":p} where
// tokens_predicted is cumulative (so each event's token count is exact), and a final
// event with "stop":true and "timings".
func (d *decoder) decodeLlamaCpp(data, event []byte) error {
	d.begin()
	if isDoneMarker(data) {
		d.ci.done = true
		return nil
	}
	s, err := d.openObject(data)
	if err != nil {
		return err
	}
	predicted, evaluated := 0, 0
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "content":
			raw, _ := s.optStr()
			d.addText(raw, true)
		case "stop":
			if s.bool() {
				d.ci.done, d.ci.finish = true, true
			}
		case "tokens_predicted":
			predicted = s.int()
		case "tokens_evaluated":
			evaluated = s.int()
		case "timings":
			d.llamaTimings()
		case "error":
			d.errorMember()
		default:
			s.skip()
		}
	}
	if err := s.close(); err != nil {
		return err
	}
	d.addCount(predicted, evaluated)
	if string(event) == "error" && !d.ci.streamErr {
		d.ci.streamErr = true
		d.ci.errMsg = append(d.ci.errMsg[:0], data...)
	}
	return nil
}

// decodeTGI decodes one SSE event of TGI's /generate_stream:
// {"index":i,"token":{"text":"…","special":false},"generated_text":null,"details":null},
// the last with "details":{"finish_reason":…,"generated_tokens":n}. Every event is one
// token; special tokens (EOS) count, as TGI counts them. TGI puts its timings only in the
// headers of non-streaming replies, so a stream yields no server timings.
func (d *decoder) decodeTGI(data, _ []byte) error {
	d.begin()
	s, err := d.openObject(data)
	if err != nil {
		return err
	}
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "token":
			if !s.obj() {
				continue
			}
			f := true
			for k2, ok2 := s.member(&f); ok2; k2, ok2 = s.member(&f) {
				if string(k2) == "text" {
					raw, _ := s.optStr()
					// An event is one generated token even when its text is empty.
					d.ci.tokens, d.ci.content = true, true
					if d.keep {
						d.text = appendUnescaped(d.text, raw)
					}
					continue
				}
				s.skip()
			}
		case "details":
			if !s.obj() {
				continue
			}
			f := true
			for k2, ok2 := s.member(&f); ok2; k2, ok2 = s.member(&f) {
				switch string(k2) {
				case "finish_reason":
					if raw, _ := s.optStr(); len(raw) > 0 {
						d.ci.finish, d.ci.done = true, true
					}
				case "generated_tokens":
					d.addCount(s.int(), 0)
				default:
					s.skip()
				}
			}
		case "error":
			d.errorMember()
		default:
			s.skip()
		}
	}
	return s.close()
}

// decodeAnthropic decodes one event of the Messages API stream. Keys may come in any
// order, so the event's type is applied after the whole object is read.
func (d *decoder) decodeAnthropic(data, event []byte) error {
	d.begin()
	s, err := d.openObject(data)
	if err != nil {
		return err
	}
	var typ []byte
	outputTokens := 0
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "type":
			typ, _ = s.optStr()
		case "message": // message_start: id and input token count
			if !s.obj() {
				continue
			}
			f := true
			for k2, ok2 := s.member(&f); ok2; k2, ok2 = s.member(&f) {
				switch string(k2) {
				case "id":
					d.ci.id, _ = s.optStr()
				case "usage":
					// Its output_tokens is a placeholder (1), not a count: ignored.
					in, _ := d.anthropicUsage()
					d.addCount(0, in)
				default:
					s.skip()
				}
			}
		case "delta":
			if !s.obj() {
				continue
			}
			f := true
			for k2, ok2 := s.member(&f); ok2; k2, ok2 = s.member(&f) {
				switch string(k2) {
				case "text", "partial_json":
					raw, _ := s.optStr()
					d.addText(raw, true)
				case "thinking":
					raw, _ := s.optStr()
					d.addText(raw, false)
				case "stop_reason":
					if raw, _ := s.optStr(); len(raw) > 0 {
						d.ci.finish = true
					}
				default:
					s.skip()
				}
			}
		case "usage": // message_delta: cumulative output tokens
			_, outputTokens = d.anthropicUsage()
		case "error":
			d.errorMember()
		default:
			s.skip()
		}
	}
	if err := s.close(); err != nil {
		return err
	}
	switch string(typ) {
	case "message_stop":
		d.ci.done = true
	case "message_delta":
		d.addCount(outputTokens, 0)
	case "error":
		if !d.ci.streamErr {
			d.ci.streamErr = true
			d.ci.errMsg = append(d.ci.errMsg[:0], data...)
		}
	}
	if string(event) == "error" && !d.ci.streamErr {
		d.ci.streamErr = true
		d.ci.errMsg = append(d.ci.errMsg[:0], data...)
	}
	return nil
}

func (d *decoder) anthropicUsage() (input, output int) {
	s := &d.s
	if !s.obj() {
		return 0, 0
	}
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "input_tokens":
			input = s.int()
		case "output_tokens":
			output = s.int()
		default:
			s.skip()
		}
	}
	return input, output
}
