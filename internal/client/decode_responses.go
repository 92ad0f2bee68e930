package client

// decodeResponses decodes one SSE event of OpenAI's Responses API (/v1/responses with
// "stream": true). Every event's data is an object with a "type" (the SSE event name
// repeats it; llama.cpp sends both, but the type alone decides):
//
//   - response.output_text.delta, response.refusal.delta: generated answer text in "delta";
//   - response.output_item.added with an item of type function_call: a tool call begins, its
//     function's name in item.name; response.function_call_arguments.delta: its argument
//     text in "delta" (response.function_call_arguments.done and response.output_item.done
//     repeat the whole call, and count nothing);
//   - response.reasoning_text.delta, response.reasoning_summary_text.delta: reasoning;
//   - response.created / response.in_progress: the response's id in response.id;
//   - response.completed, response.incomplete (max_output_tokens reached): the end, with
//     response.usage {input_tokens, output_tokens}; llama.cpp adds its "timings" beside
//     "response";
//   - response.failed (response.error.message) and error (message): the stream's error.
//
// There is no [DONE]: a stream that ends without response.completed (or incomplete) is
// incomplete.
func (d *decoder) decodeResponses(data, event []byte) error {
	d.begin()
	if isDoneMarker(data) {
		return nil // not part of the API, but harmless
	}
	s, err := d.openObject(data)
	if err != nil {
		return err
	}
	var typ, delta, msg, item []byte
	hasMsg := false
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "type":
			typ, _ = s.optStr()
		case "delta":
			delta, _ = s.optStr()
		case "response":
			d.responseObject()
		case "timings":
			d.llamaTimings()
		case "message":
			msg, hasMsg = s.optStr()
		case "item":
			item = d.responseItem()
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
	case "response.output_text.delta", "response.refusal.delta":
		d.addText(delta, true)
	case "response.function_call_arguments.delta":
		d.addTool(delta)
	case "response.output_item.added":
		d.addTool(item)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.reasoning.delta":
		d.addText(delta, false)
	case "response.completed", "response.incomplete":
		d.ci.done, d.ci.finish = true, true
	case "response.failed":
		d.ci.streamErr = true
		if len(d.ci.errMsg) == 0 {
			d.ci.errMsg = append(d.ci.errMsg[:0], "the response failed (response.failed)"...)
		}
	case "error":
		d.ci.streamErr = true
		if hasMsg {
			d.ci.errMsg = appendUnescaped(d.ci.errMsg[:0], msg)
		}
	}
	if string(event) == "error" && !d.ci.streamErr {
		d.ci.streamErr = true
		d.ci.errMsg = append(d.ci.errMsg[:0], data...)
	}
	return nil
}

// responseObject reads the "response" member of a Responses event: its id, usage and error.
func (d *decoder) responseObject() {
	s := &d.s
	if !s.obj() {
		return
	}
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "id":
			d.ci.id, _ = s.optStr()
		case "usage":
			d.openAIUsage()
		case "error":
			if !s.null() {
				d.errorValue()
				d.ci.streamErr = false // the event's type decides (response.failed)
			}
		default:
			s.skip()
		}
	}
}

// responseItem reads an event's "item" and returns the function's name (escaped) when it
// is a function_call item, nil otherwise.
func (d *decoder) responseItem() []byte {
	s := &d.s
	if !s.obj() {
		return nil
	}
	var typ, name []byte
	first := true
	for k, ok := s.member(&first); ok; k, ok = s.member(&first) {
		switch string(k) {
		case "type":
			typ, _ = s.optStr()
		case "name":
			name, _ = s.optStr()
		default:
			s.skip()
		}
	}
	if string(typ) != "function_call" {
		return nil
	}
	return name
}
