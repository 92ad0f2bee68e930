package workload

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestGenerateToolsDeterministicAndValid(t *testing.T) {
	a, b := GenerateTools(5, 7), GenerateTools(5, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different tools")
	}
	if c := GenerateTools(5, 8); reflect.DeepEqual(a, c) {
		t.Error("another seed gave the same tools")
	}
	if p := GenerateTools(3, 7); !reflect.DeepEqual(p, a[:3]) {
		t.Errorf("--tools 3 is not the first 3 of --tools 5: %v", p)
	}
	if err := ValidateTools(a, ToolRequired); err != nil {
		t.Fatal(err)
	}
	for _, tl := range a {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tl.Parameters, &schema); err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		if schema.Type != "object" || len(schema.Properties) == 0 || len(schema.Required) != 1 || schema.Properties[schema.Required[0]] == nil {
			t.Errorf("%s: schema %s", tl.Name, tl.Parameters)
		}
		if tl.Description == "" || !strings.Contains(tl.Name, "_") {
			t.Errorf("%+v: want a verb_noun name and a description", tl)
		}
	}
	// More tools than verb × noun combinations stay distinct.
	if err := ValidateTools(GenerateTools(MaxTools, 1), ""); err != nil {
		t.Error(err)
	}
}

func TestParseTools(t *testing.T) {
	nested := `[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
		{"type":"function","name":"flat_one","parameters":null}]`
	tools, err := ParseTools("f.json", []byte(nested))
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolDef{{Name: "get_weather", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "flat_one"}}
	if !reflect.DeepEqual(tools, want) {
		t.Errorf("got %+v, want %+v", tools, want)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"tools":[]}`, "want a JSON array"},
		{`[`, "not valid JSON"},
		{`[]`, "holds no function definitions"},
		{`[{"type":"web_search"}]`, `tool 0: type "web_search"`},
		{`[{"function":{"name":"a b"}}]`, `name "a b"`},
		{`[{"function":{}}]`, "tool 0: no name"},
		{`[{"name":"x"},{"name":"x"}]`, `tool 1: name "x" given twice`},
		{`[{"name":"x","parameters":{"type":"string"}}]`, `tool 0 (x): parameters: type is "string"`},
		{`[{"name":"x","parameters":[1]}]`, "want a JSON Schema object"},
		{`[{"name":"x","parameters":{"properties":3}}]`, "properties is 3"},
	} {
		_, err := ParseTools("f.json", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.json: ") {
			t.Errorf("%s: error %v, want f.json: …%s…", tc.in, err, tc.want)
		}
	}
}

func TestValidateToolChoice(t *testing.T) {
	tools := GenerateTools(2, 1)
	if err := ValidateTools(tools, ToolChoice(tools[1].Name)); err != nil {
		t.Error(err)
	}
	if err := ValidateTools(tools, "nope"); err == nil || !strings.Contains(err.Error(), `"nope": not one of the tools`) {
		t.Errorf("unknown forced function: %v", err)
	}
	if err := ValidateTools(nil, ToolRequired); !errors.Is(err, ErrNoTools) {
		t.Errorf("required without tools: %v", err)
	}
	if err := ValidateTools(nil, ToolNone); err != nil {
		t.Errorf("none without tools: %v", err)
	}
}

func TestWithTools(t *testing.T) {
	src, err := New(Config{InputTokens: Fixed(16), OutputTokens: Fixed(4), LengthsOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := GenerateTools(2, 3)
	r := WithTools(src, tools, ToolRequired).Request(0, 1)
	if !reflect.DeepEqual(r.Tools, tools) || r.ToolChoice != ToolRequired || r.InputTokens != 16 {
		t.Errorf("request %+v", r)
	}
}

// TestAgenticToolChoice: an agentic task's calls offer the tools; those whose answer is to
// be a tool call keep the run's tool choice, the others (the final answer) ask for text.
func TestAgenticToolChoice(t *testing.T) {
	src := agentSource(t, Agent{Calls: Fixed(3), ToolResultTokens: Fixed(8)}, true)
	tooled := WithTools(src, GenerateTools(2, 1), ToolAuto)
	seen := map[bool]int{}
	for i := range 3 {
		r := tooled.Request(0, i)
		if !r.Task.IsTask() || len(r.Tools) != 2 {
			t.Fatalf("request %d: task %+v, %d tools", i, r.Task, len(r.Tools))
		}
		want := ToolAuto
		if !r.Task.ToolCall {
			want = ToolNone
		}
		if r.ToolChoice != want {
			t.Errorf("call %d (tool call %t): tool_choice %q, want %q", r.Task.Call, r.Task.ToolCall, r.ToolChoice, want)
		}
		seen[r.Task.ToolCall]++
	}
	if seen[true] != 2 || seen[false] != 1 {
		t.Errorf("want two tool calls and a final answer among a task's 3 calls: %v", seen)
	}
}
