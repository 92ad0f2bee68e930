package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/sim"
)

// toolSet is what a request offers the model: its functions and its tool_choice.
type toolSet struct {
	funcs  []toolFunc
	choice string // sim.ToolChoiceAuto, ToolChoiceRequired, ToolChoiceNone, or a function's name
}

// toolFunc is one offered function: its name, and the parameter a simulated call fills
// with the answer's words.
type toolFunc struct{ name, param string }

// toolCall is the call a simulated answer makes.
type toolCall struct {
	toolFunc
	id string // call_…
}

// decodeTools reads a request's tools and tool_choice, in chat completions' shape
// ({"type":"function","function":{"name",…}}) or, for the Responses API, the flat one
// ({"type":"function","name",…}); nil when the request offers none. Errors name the field,
// as vLLM's 400s do.
func decodeTools(raw, choice json.RawMessage, responses bool) (*toolSet, *apiError) {
	raw, choice = bytes.TrimSpace(raw), bytes.TrimSpace(choice)
	var defs []json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &defs); err != nil {
			return nil, badRequest("tools", "tools must be an array of function definitions: %v", err)
		}
	}
	ts := &toolSet{choice: sim.ToolChoiceAuto}
	for i, d := range defs {
		var w struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(d, &w); err != nil {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] must be an object: %v", i, err)
		}
		if w.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type must be \"function\", got %q", i, w.Type)
		}
		name, params := w.Name, w.Parameters
		if !responses {
			if w.Function == nil {
				return nil, badRequest(fmt.Sprintf("tools[%d].function", i), "tools[%d].function is required: {\"name\": …, \"parameters\": …}", i)
			}
			name, params = w.Function.Name, w.Function.Parameters
		}
		if name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] has no function name", i)
		}
		ts.funcs = append(ts.funcs, toolFunc{name: name, param: argumentName(params)})
	}
	if len(choice) > 0 && string(choice) != "null" {
		c, aerr := decodeToolChoice(choice, responses)
		if aerr != nil {
			return nil, aerr
		}
		ts.choice = c
	}
	switch {
	case len(ts.funcs) == 0 && ts.choice != sim.ToolChoiceAuto && ts.choice != sim.ToolChoiceNone:
		return nil, badRequest("tool_choice", "tool_choice %q needs tools: none are given", ts.choice)
	case len(ts.funcs) == 0:
		return nil, nil
	}
	if ts.forced() < 0 && !isToolKeyword(ts.choice) {
		return nil, badRequest("tool_choice", "tool_choice names function %q, which is not among the tools", ts.choice)
	}
	return ts, nil
}

func isToolKeyword(c string) bool {
	return c == sim.ToolChoiceAuto || c == sim.ToolChoiceRequired || c == sim.ToolChoiceNone
}

// decodeToolChoice reads "auto", "required", "none", or the function object
// {"type":"function","function":{"name":…}} ({"type":"function","name":…} for Responses).
func decodeToolChoice(raw json.RawMessage, responses bool) (string, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !isToolKeyword(s) {
			return "", badRequest("tool_choice", "tool_choice must be auto, required, none or a function object, got %q", s)
		}
		return s, nil
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Type != "function" {
		return "", badRequest("tool_choice", "tool_choice must be auto, required, none or {\"type\": \"function\", …}")
	}
	name := o.Name
	if !responses && o.Function != nil {
		name = o.Function.Name
	}
	if name == "" || isToolKeyword(name) {
		return "", badRequest("tool_choice", "tool_choice's function has no name")
	}
	return name, nil
}

// argumentName is the parameter a simulated call fills: the first required one, else the
// first property by name, else "input" (a function without parameters gets one).
func argumentName(params json.RawMessage) string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(params, &schema) != nil {
		return "input"
	}
	for _, r := range schema.Required {
		if _, ok := schema.Properties[r]; ok && jsonSafe(r) {
			return r
		}
	}
	names := make([]string, 0, len(schema.Properties))
	for k := range schema.Properties {
		if jsonSafe(k) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "input"
	}
	sort.Strings(names)
	return names[0]
}

// jsonSafe says s needs no escaping in JSON (so it can be written twice quoted, as a key
// inside the arguments string).
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return false
		}
	}
	return s != ""
}

// forced is the index of the function tool_choice names, or -1.
func (ts *toolSet) forced() int {
	for i, f := range ts.funcs {
		if f.name == ts.choice {
			return i
		}
	}
	return -1
}

// call is the tool call the answer to request n makes, or nil for a text answer
// (sim.ToolConfig.CallsTool decides); an unforced call's function is a seeded pick.
func (ts *toolSet) call(cfg sim.ToolConfig, seed int64, n uint64, id string) *toolCall {
	if ts == nil {
		return nil
	}
	choice := ts.choice
	if !isToolKeyword(choice) {
		choice = ts.funcs[ts.forced()].name
	}
	if !cfg.CallsTool(choice, seed, n) {
		return nil
	}
	i := ts.forced()
	if i < 0 {
		i = int(splitmix64(uint64(seed)^n^0x66756e63) % uint64(len(ts.funcs))) // "func"
	}
	return &toolCall{toolFunc: ts.funcs[i], id: "call_" + id}
}

// appendArgsOpen appends the start of the call's arguments, {"param": " as it is inside a
// JSON string: the answer's words then fill the parameter's value.
func (tc *toolCall) appendArgsOpen(b []byte) []byte {
	b = append(b, `{\"`...)
	b = append(b, tc.param...)
	return append(b, `\": \"`...)
}

// appendArgsClose appends the end of the arguments, "}, inside a JSON string.
func appendArgsClose(b []byte) []byte { return append(b, `\"}`...) }

// arguments is the whole call's arguments as a JSON value's text (not inside a string),
// for a non-streamed answer: {"param": "<n words>"}.
func (tc *toolCall) arguments(base uint64, n int) string {
	return `{"` + tc.param + `": "` + string(appendWords(nil, base, 0, n)) + `"}`
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// toolTokens appends the event of a tool call's tokens [from, from+n): the call's first
// carries its function's name and the start of its arguments, as vLLM streams a call
// (chat: delta.tool_calls; Responses: response.output_item.added, then
// response.function_call_arguments.delta); each carries its tokens' words as argument
// text, and the last closes the arguments. So usage counts exactly the engine's tokens, and
// the arguments are JSON: {"param": "<words>"}.
func (sw *streamWriter) toolTokens(from, n int, last bool) {
	rq, tc := sw.rq, sw.rq.tool
	args := func(b []byte) []byte {
		if from == 0 {
			b = tc.appendArgsOpen(b)
		}
		b = appendWords(b, rq.base, from, n)
		if last {
			b = appendArgsClose(b)
		}
		return b
	}
	if rq.responses {
		if from == 0 {
			sw.buf = append(sw.buf, "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":"...)
			sw.buf = rq.appendFunctionCall(sw.buf, "in_progress", -1)
			sw.buf = append(sw.buf, "}\n\n"...)
		}
		sw.buf = append(sw.buf, "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_"...)
		sw.buf = append(sw.buf, tc.id[len("call_"):]...)
		sw.buf = append(sw.buf, "\",\"output_index\":0,\"delta\":\""...)
		sw.buf = args(sw.buf)
		sw.buf = append(sw.buf, "\"}\n\n"...)
		return
	}
	sw.open()
	sw.buf = append(sw.buf, `{"index":0,"delta":{"tool_calls":[{"index":0,`...)
	if from == 0 {
		sw.buf = append(sw.buf, `"id":"`...)
		sw.buf = append(sw.buf, tc.id...)
		sw.buf = append(sw.buf, `","type":"function","function":{"name":`...)
		sw.buf = appendQuoted(sw.buf, tc.name)
		sw.buf = append(sw.buf, `,"arguments":"`...)
	} else {
		sw.buf = append(sw.buf, `"function":{"arguments":"`...)
	}
	sw.buf = args(sw.buf)
	sw.buf = append(sw.buf, `"}}]},"logprobs":null,"finish_reason":null}]`...)
	sw.close(from + n)
}

// functionCallDone appends the Responses API's events that end a call: its whole arguments
// (response.function_call_arguments.done) and the finished item (response.output_item.done).
func (sw *streamWriter) functionCallDone(completion int) {
	rq := sw.rq
	sw.buf = append(sw.buf, "event: response.function_call_arguments.done\ndata: {\"type\":\"response.function_call_arguments.done\",\"item_id\":\"fc_"...)
	sw.buf = append(sw.buf, rq.tool.id[len("call_"):]...)
	sw.buf = append(sw.buf, "\",\"output_index\":0,\"arguments\":"...)
	sw.buf = appendQuoted(sw.buf, rq.tool.arguments(rq.base, completion))
	sw.buf = append(sw.buf, "}\n\nevent: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":"...)
	sw.buf = rq.appendFunctionCall(sw.buf, "completed", completion)
	sw.buf = append(sw.buf, "}\n\n"...)
}

// appendFunctionCall appends the Responses API's function_call output item, with the
// arguments of completion tokens (none when completion < 0: the item just began).
func (rq *request) appendFunctionCall(b []byte, status string, completion int) []byte {
	tc := rq.tool
	b = append(b, `{"type":"function_call","id":"fc_`...)
	b = append(b, tc.id[len("call_"):]...)
	b = append(b, `","call_id":"`...)
	b = append(b, tc.id...)
	b = append(b, `","name":`...)
	b = appendQuoted(b, tc.name)
	b = append(b, `,"arguments":`...)
	if completion < 0 {
		b = append(b, `""`...)
	} else {
		b = appendQuoted(b, tc.arguments(rq.base, completion))
	}
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	return append(b, `"}`...)
}

// appendChatCall appends chat completions' message.tool_calls entry of the call, with the
// arguments of total tokens (a non-streamed answer).
func (rq *request) appendChatCall(b []byte, total int) []byte {
	tc := rq.tool
	b = append(b, `{"id":"`...)
	b = append(b, tc.id...)
	b = append(b, `","type":"function","function":{"name":`...)
	b = appendQuoted(b, tc.name)
	b = append(b, `,"arguments":`...)
	b = appendQuoted(b, tc.arguments(rq.base, total))
	return append(b, `}}`...)
}

// callsText is the generated text of a message's tool_calls, as the client counts an
// answer's calls (chattemplate.ToolCallsText).
func callsText(raw json.RawMessage) string { return chattemplate.ToolCallsText(raw) }
