package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// ToolDef is one function a request offers the model: OpenAI's function tool, which the chat
// and Responses APIs (and Ollama's chat) take in their own shapes (internal/client).
type ToolDef struct {
	Name        string
	Description string
	// Parameters is the function's JSON Schema, an object schema, as it is sent; nil sends
	// none.
	Parameters json.RawMessage
}

// ToolChoice is a request's tool_choice: ToolAuto, ToolRequired, ToolNone, or the name of
// one of its tools (that function must be called). Empty sends none (the server's default,
// auto).
type ToolChoice string

// The tool choices of OpenAI's APIs.
const (
	ToolAuto     ToolChoice = "auto"
	ToolRequired ToolChoice = "required"
	ToolNone     ToolChoice = "none"
)

// Function is the name of the function c forces, or "" when c is auto, required or none.
func (c ToolChoice) Function() string {
	switch c {
	case "", ToolAuto, ToolRequired, ToolNone:
		return ""
	}
	return string(c)
}

// MaxTools bounds the tools a request offers: past a few hundred definitions a request is more
// tools than prompt.
const MaxTools = 256

// toolName is OpenAI's rule for function names.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ErrNoTools is ValidateTools' problem with a choice that asks for a tool (auto, required)
// where none are offered.
var ErrNoTools = errors.New("no tools are offered")

// ValidateTools checks definitions as a server would: each name valid and distinct, each
// parameters schema a JSON object of type "object"; and that choice names one of them.
func ValidateTools(tools []ToolDef, choice ToolChoice) error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range tools {
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("tool %d: no name (each function needs a name)", i))
		case !toolName.MatchString(t.Name):
			errs = append(errs, fmt.Errorf("tool %d: name %q: a function name is 1 to 64 letters, digits, _ or -", i, t.Name))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("tool %d: name %q given twice; names must be distinct", i, t.Name))
		}
		seen[t.Name] = true
		if t.Parameters != nil {
			if err := checkSchema(t.Parameters); err != nil {
				errs = append(errs, fmt.Errorf("tool %d (%s): parameters: %w", i, t.Name, err))
			}
		}
	}
	if f := choice.Function(); f != "" {
		if len(tools) == 0 {
			errs = append(errs, fmt.Errorf("tool choice %q: no tools are offered", f))
		} else if !seen[f] {
			errs = append(errs, fmt.Errorf("tool choice %q: not one of the tools (%s); or auto, required, none", f, strings.Join(toolNames(tools), ", ")))
		}
	} else if choice != "" && choice != ToolNone && len(tools) == 0 {
		errs = append(errs, fmt.Errorf("tool choice %s: %w", choice, ErrNoTools))
	}
	return errors.Join(errs...)
}

func toolNames(tools []ToolDef) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// checkSchema checks that raw is a JSON object whose "type", when given, is "object"
// (function arguments are always an object), and whose "properties", when given, is an object.
func checkSchema(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("want a JSON Schema object, e.g. {\"type\":\"object\",\"properties\":{...}}: %v", err)
	}
	if t, ok := m["type"]; ok {
		var s string
		if json.Unmarshal(t, &s) != nil || s != "object" {
			return fmt.Errorf("type is %s; a function's arguments are an object (\"type\": \"object\")", t)
		}
	}
	if p, ok := m["properties"]; ok {
		var props map[string]json.RawMessage
		if json.Unmarshal(p, &props) != nil {
			return fmt.Errorf("properties is %s, want an object of named schemas", excerptJSON(p))
		}
	}
	return nil
}

func excerptJSON(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// wireTool is a definition as a tools file holds it: chat completions' nested shape
// {"type":"function","function":{"name",...}} or the Responses API's flat one
// {"type":"function","name",...}.
type wireTool struct {
	Type        string          `json:"type"`
	Function    *wireFunction   `json:"function"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ParseTools reads a JSON array of function definitions in OpenAI's shapes (chat completions'
// nested one or the Responses API's flat one), validated as ValidateTools does; name
// (the file's) prefixes every message.
func ParseTools(name string, data []byte) ([]ToolDef, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("%s: not valid JSON at byte %d: %v", name, syn.Offset, err)
		}
		return nil, fmt.Errorf("%s: want a JSON array of function definitions, "+
			`[{"type":"function","function":{"name":"...","parameters":{...}}}]: %v`, name, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: the array holds no function definitions", name)
	}
	var errs []error
	tools := make([]ToolDef, 0, len(raw))
	for i, r := range raw {
		var w wireTool
		if err := json.Unmarshal(r, &w); err != nil {
			errs = append(errs, fmt.Errorf("tool %d: want an object with type and function: %v", i, err))
			continue
		}
		if w.Type != "" && w.Type != "function" {
			errs = append(errs, fmt.Errorf("tool %d: type %q: only function tools can be sent (\"type\": \"function\")", i, w.Type))
			continue
		}
		t := ToolDef{Name: w.Name, Description: w.Description, Parameters: w.Parameters}
		if w.Function != nil {
			t = ToolDef{Name: w.Function.Name, Description: w.Function.Description, Parameters: w.Function.Parameters}
		}
		if string(bytes.TrimSpace(t.Parameters)) == "null" {
			t.Parameters = nil
		}
		if t.Parameters != nil {
			var buf bytes.Buffer
			if json.Compact(&buf, t.Parameters) == nil {
				t.Parameters = buf.Bytes()
			}
		}
		tools = append(tools, t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := ValidateTools(tools, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(tools) > MaxTools {
		return nil, fmt.Errorf("%s: %d tools; at most %d", name, len(tools), MaxTools)
	}
	return tools, nil
}

// LoadTools reads a tools file (ParseTools).
func LoadTools(path string) ([]ToolDef, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tools file: %w", err)
	}
	return ParseTools(path, data)
}

// toolVerbs, toolNouns and toolParams are what generated definitions are made of: the kinds
// of function an agent is given (look up, search, change things), with typed parameters.
var (
	toolVerbs = []string{"get", "search", "list", "create", "update", "delete", "fetch", "send", "lookup", "run"}
	toolNouns = []string{"weather", "files", "issue", "order", "calendar_event", "email", "invoice", "customer",
		"ticket", "document", "flight", "stock_quote", "repository", "database_rows", "web_page", "user"}
	toolParams = []toolParam{
		{"query", `{"type":"string","description":"What to look for, in plain words"}`},
		{"id", `{"type":"string","description":"The identifier of the item"}`},
		{"limit", `{"type":"integer","minimum":1,"maximum":100,"description":"At most this many results"}`},
		{"city", `{"type":"string","description":"City name, e.g. San Francisco"}`},
		{"date", `{"type":"string","format":"date","description":"A day, as YYYY-MM-DD"}`},
		{"path", `{"type":"string","description":"A path relative to the workspace root"}`},
		{"units", `{"type":"string","enum":["metric","imperial"]}`},
		{"body", `{"type":"string","description":"The text to write or send"}`},
		{"recipient", `{"type":"string","description":"An email address"}`},
		{"include_archived", `{"type":"boolean","description":"Also return archived items"}`},
		{"sql", `{"type":"string","description":"A read-only SQL query"}`},
		{"url", `{"type":"string","format":"uri"}`},
	}
)

type toolParam struct{ name, schema string }

// GenerateTools makes n plausible function definitions, a pure function of (n, seed): names
// such as search_flight, distinct; each with a description and one to four typed
// parameters, the first required.
func GenerateTools(n int, seed int64) []ToolDef {
	if n <= 0 {
		return nil
	}
	rng := newRand(seed, purposeTool, 0, 0) // not keyed on n: 3 tools are the first 3 of 5
	combos := len(toolVerbs) * len(toolNouns)
	order := rng.Perm(combos)
	tools := make([]ToolDef, n)
	for i := range tools {
		c := order[i%combos]
		name := toolVerbs[c/len(toolNouns)] + "_" + toolNouns[c%len(toolNouns)]
		if i >= combos {
			name = fmt.Sprintf("%s_%d", name, i/combos+1)
		}
		k := 1 + rng.IntN(4)
		picked := rng.Perm(len(toolParams))[:k]
		sort.Ints(picked)
		var props strings.Builder
		for j, p := range picked {
			if j > 0 {
				props.WriteByte(',')
			}
			fmt.Fprintf(&props, "%q:%s", toolParams[p].name, toolParams[p].schema)
		}
		params := fmt.Sprintf(`{"type":"object","properties":{%s},"required":[%q]}`, props.String(), toolParams[picked[0]].name)
		verb, noun := name[:strings.IndexByte(name, '_')], strings.ReplaceAll(name[strings.IndexByte(name, '_')+1:], "_", " ")
		tools[i] = ToolDef{Name: name, Description: fmt.Sprintf("%s %s for the user (%s)", capital(verb), noun, name),
			Parameters: json.RawMessage(params)}
	}
	return tools
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WithTools offers tools, with choice, on every request of src.
func WithTools(src Source, tools []ToolDef, choice ToolChoice) Source {
	return &tooled{src: src, tools: tools, choice: choice}
}

type tooled struct {
	src    Source
	tools  []ToolDef
	choice ToolChoice
}

func (t *tooled) Request(level, i int) Request {
	r := t.src.Request(level, i)
	r.Tools, r.ToolChoice = t.tools, t.choice
	if r.Task.IsTask() && !r.Task.ToolCall {
		// An agentic task's answer that is not a tool call (its final one, a sub-agent's, a
		// compaction's summary) is text; the tools stay offered, as an agent's loop keeps them.
		r.ToolChoice = ToolNone
	}
	return r
}

func (t *tooled) Len() int   { return t.src.Len() }
func (t *tooled) Info() Info { return Describe(t.src) }
