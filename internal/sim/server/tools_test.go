package server

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

const weatherTools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"units":{"type":"string"},"city":{"type":"string"}},"required":["city"]}}},{"type":"function","function":{"name":"noop"}}]`

// sseData is a stream's data lines, [DONE] left out.
func sseData(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			out = append(out, d)
		}
	}
	return out
}

// A chat request offering tools with tool_choice required is answered, as vLLM answers
// it, with a streamed tool call: one delta.tool_calls piece per engine step, the first with
// the call's id and function name, whose arguments join into a JSON object holding exactly
// the requested tokens' words; finish_reason tool_calls; usage counts the engine's tokens.
func TestStreamedToolCall(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{Seed: 3})
	resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"weather?"}],"max_tokens":5,"ignore_eos":true,`+
		`"stream":true,"stream_options":{"include_usage":true},"tool_choice":{"type":"function","function":{"name":"get_weather"}},"tools":`+weatherTools+`}`)
	body := string(readAll(t, resp.Body))
	resp.Body.Close()
	var args strings.Builder
	pieces, name, finish, usage := 0, "", "", 0
	for i, d := range sseData(t, body) {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("event %d not JSON: %v\n%s", i, err, d)
		}
		if c.Usage != nil {
			usage = c.Usage.CompletionTokens
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				t.Errorf("text in a tool-call answer: %q", *ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if pieces == 0 && (tc.ID == "" || tc.Function.Name == "") || pieces > 0 && (tc.ID != "" || tc.Function.Name != "") {
					t.Errorf("piece %d: id %q name %q (only the first names the call)", pieces, tc.ID, tc.Function.Name)
				}
				name += tc.Function.Name
				args.WriteString(tc.Function.Arguments)
				pieces++
			}
		}
	}
	var a map[string]string
	if err := json.Unmarshal([]byte(args.String()), &a); err != nil || len(a) != 1 {
		t.Fatalf("arguments %q: %v", args.String(), err)
	}
	if name != "get_weather" || pieces != 5 || finish != "tool_calls" || usage != 5 || len(strings.Fields(a["city"])) != 5 {
		t.Errorf("call %s(%s) in %d pieces, finish %q, usage %d; want get_weather's city of 5 words in 5 pieces, tool_calls, 5\n%s",
			name, args.String(), pieces, finish, usage, body)
	}
	// The definitions cost no prompt tokens: the prompt is the conversation the client sized.
	if got := g.got[0].PromptTokens; got != EstimateTokens("weather?") {
		t.Errorf("prompt tokens %d, want the message's %d", got, EstimateTokens("weather?"))
	}
}

// The Responses API's call: response.output_item.added names it, argument deltas follow,
// .done events repeat it whole, and response.completed holds it as a function_call item.
func TestStreamedResponsesToolCall(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	tools := `[{"type":"function","name":"search","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}]`
	resp := post(t, ts, "/v1/responses", `{"input":"find","max_output_tokens":3,"ignore_eos":true,"stream":true,"tool_choice":"required","tools":`+tools+`}`)
	body := string(readAll(t, resp.Body))
	resp.Body.Close()
	var args, done string
	added := 0
	for _, d := range sseData(t, body) {
		var e struct {
			Type      string `json:"type"`
			Delta     string `json:"delta"`
			Arguments string `json:"arguments"`
			Item      struct {
				Type, Name string
			} `json:"item"`
			Response struct {
				Output []struct {
					Type, Name, Arguments string
				} `json:"output"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(d), &e); err != nil {
			t.Fatalf("%v: %s", err, d)
		}
		switch e.Type {
		case "response.output_item.added":
			if e.Item.Type != "function_call" || e.Item.Name != "search" {
				t.Errorf("item %+v", e.Item)
			}
			added++
		case "response.function_call_arguments.delta":
			args += e.Delta
		case "response.function_call_arguments.done":
			done = e.Arguments
		case "response.output_text.delta":
			t.Errorf("text in a tool-call answer: %s", d)
		case "response.completed":
			if o := e.Response.Output; len(o) != 1 || o[0].Type != "function_call" || o[0].Arguments != args {
				t.Errorf("completed output %+v, arguments %q", o, args)
			}
		}
	}
	var a map[string]string
	if added != 1 || args != done || json.Unmarshal([]byte(args), &a) != nil || len(strings.Fields(a["query"])) != 3 {
		t.Errorf("added %d, arguments %q, done %q\n%s", added, args, done, body)
	}
}

// Non-streamed answers carry the whole call: chat's message.tool_calls, the Responses
// API's function_call output item.
func TestWholeToolCall(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"ignore_eos":true,"tool_choice":"required","tools":`+weatherTools+`}`)
	var doc struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(readAll(t, resp.Body), &doc); err != nil || len(doc.Choices) != 1 {
		t.Fatal(err)
	}
	m := doc.Choices[0]
	if m.Message.Content != nil || len(m.Message.ToolCalls) != 1 || m.FinishReason != "tool_calls" || !json.Valid([]byte(m.Message.ToolCalls[0].Function.Arguments)) {
		t.Errorf("answer %+v", m)
	}
}

// tool_choice decides: none answers with text, auto with a call for the profile's fraction
// of requests (all by default), a named function calls it; the other function is a seeded
// pick. Wrong definitions and choices are 400s naming the field.
func TestToolChoice(t *testing.T) {
	quarter := 0.25
	for _, tc := range []struct {
		choice string
		cfg    sim.ToolConfig
		calls  [2]int // bounds on calls of 40 requests
	}{
		{`"none"`, sim.ToolConfig{}, [2]int{0, 0}},
		{`"auto"`, sim.ToolConfig{}, [2]int{40, 40}},
		{``, sim.ToolConfig{AutoCall: &quarter}, [2]int{4, 18}},
		{`"required"`, sim.ToolConfig{AutoCall: &quarter}, [2]int{40, 40}},
	} {
		_, ts := newTestServer(t, &fakeGen{}, Options{Tools: tc.cfg, Seed: 9})
		calls, noops := 0, 0
		for range 40 {
			choice := ""
			if tc.choice != "" {
				choice = `"tool_choice":` + tc.choice + `,`
			}
			resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":1,`+choice+`"tools":`+weatherTools+`}`)
			b := string(readAll(t, resp.Body))
			if strings.Contains(b, `"tool_calls"`) {
				calls++
			}
			if strings.Contains(b, `"name":"noop"`) {
				noops++
			}
		}
		if calls < tc.calls[0] || calls > tc.calls[1] || calls > 0 && (noops == 0 || noops == calls) {
			t.Errorf("choice %s: %d calls of 40 (%d of noop), want %v and both functions picked", tc.choice, calls, noops, tc.calls)
		}
	}
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	for _, tc := range []struct{ body, param string }{
		{`"tools":[{"type":"function","name":"flat"}]`, "tools[0].function"},
		{`"tools":[{"type":"code_interpreter"}]`, "tools[0].type"},
		{`"tools":{}`, "tools"},
		{`"tool_choice":"required"`, "tool_choice"},
		{`"tool_choice":"sometimes","tools":` + weatherTools, "tool_choice"},
		{`"tool_choice":{"type":"function","function":{"name":"other"}},"tools":` + weatherTools, "tool_choice"},
	} {
		resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+tc.body+`}`)
		if e := decodeError(t, resp); resp.StatusCode != 400 || e.Param == nil || *e.Param != tc.param {
			t.Errorf("%s: %d %+v, want 400 naming %s", tc.body, resp.StatusCode, e, tc.param)
		}
	}
}

// An agent's history: the assistant's earlier tool call (content null) counts as its
// function's name and arguments, and the tool's result as its content, as the client counts
// a call's tokens; a call whose shape is unknown counts nothing.
func TestHistoryWithToolCalls(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{})
	history := `{"messages":[{"role":"user","content":"weather in paris"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"the\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"sunny and warm"},{"role":"assistant","tool_calls":"odd"}],"max_tokens":1}`
	resp := post(t, ts, "/v1/chat/completions", history)
	readAll(t, resp.Body)
	want := EstimateTokens("weather in paris") + EstimateTokens(`get_weather{"city": "the"}`) + EstimateTokens("sunny and warm")
	if resp.StatusCode != 200 || g.got[0].PromptTokens != want {
		t.Errorf("status %d, prompt tokens %d, want %d", resp.StatusCode, g.got[0].PromptTokens, want)
	}
}
