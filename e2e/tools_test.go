package e2e

// Tool calls on real servers: requests that offer function definitions (--tools), and what
// llmbench records of the answers. What the tiny random model answers is whatever its
// servers make of it, so these tests check what llmbench must do whatever the answer: every
// request recorded and counted, a tool call's tokens part of the output, summary.json's
// counts agreeing with the records. docs/real-servers.md says what each server returned.

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestLlamaCppTools: 16 requests at concurrency 4 offering 3 functions with tool_choice
// required, over chat completions and the Responses API (llama-server --jinja). Every
// request completes with exactly its output tokens, and the tool-call counts are
// consistent, whatever the model answered.
func TestLlamaCppTools(t *testing.T) {
	s := llamacppTarget(t)
	for _, api := range []string{"openai-chat", "openai-responses"} {
		run := runBench(t, s, api, load{concurrency: 4, requests: 16, input: 64, output: 32}, "--tools", "3", "--tool-choice", "required")
		run.checkExact(t)
		run.checkToolCalls(t)
	}
}

// TestOllamaTools: Ollama refuses tools for a model whose template has no .Tools, so the
// test makes one that has (the test model with a template that lists the functions in a
// system turn, as Llama 3.1's does) and sends 8 requests offering 3 functions over the
// native /api/chat and over /v1/chat/completions. Ollama holds an answer back while it
// looks for a tool call in it, so a stream may be one event: the check is the outputs'
// exact length by the server's count, not one event per token.
func TestOllamaTools(t *testing.T) {
	o := ollamaTarget(t)
	o.model = createToolsModel(t, o)
	l := load{concurrency: 2, requests: 8, input: 32, output: 16}
	for _, api := range []string{"ollama", "openai-chat"} {
		run := runBench(t, o, api, l, "--tools", "3")
		if len(run.recs) != l.requests {
			t.Errorf("--api %s: %d measured records, want %d", api, len(run.recs), l.requests)
		}
		for _, r := range run.recs {
			if r.Error != nil || r.OutputTokens != l.output || r.OutputTokensSource != "usage" || r.Events.Len() == 0 {
				t.Errorf("--api %s: request %d: error %+v, %d output tokens from %q in %d events; want %d from usage",
					api, r.Index, r.Error, r.OutputTokens, r.OutputTokensSource, r.Events.Len(), l.output)
			}
		}
		run.checkToolCalls(t)
	}
	// A JSON schema in the request (format, response_format) makes even the random model
	// answer {"name": …, "parameters": …}, which Ollama reads as a tool call: every answer
	// is then one, all of whose tokens are the call's. The schema ends the answer (about 25
	// tokens); a limit of 64 leaves it room.
	l.output = 64
	schema := `{"type":"object","properties":{"name":{"type":"string","enum":["get_weather"]},` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]}},"required":["city"]}},"required":["name","parameters"]}`
	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, []byte(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for api, body := range map[string]string{
		"ollama":      `{"format":` + schema + `}`,
		"openai-chat": `{"response_format":{"type":"json_schema","json_schema":{"name":"call","schema":` + schema + `}}}`,
	} {
		run := runBench(t, o, api, l, "--tools-file", tools, "--extra-body", body)
		if len(run.recs) != l.requests {
			t.Errorf("--api %s, forced calls: %d measured records, want %d", api, len(run.recs), l.requests)
		}
		for _, r := range run.recs {
			if ft, _ := r.FirstToken(); r.Error != nil || r.OutputTokens == 0 || int(r.ToolCallTokens) != r.OutputTokens || r.FirstToolCall != ft {
				t.Errorf("--api %s, forced calls: request %d: error %+v, %d tool-call tokens of %d, first call %v, first token %v; want all",
					api, r.Index, r.Error, r.ToolCallTokens, r.OutputTokens, r.FirstToolCall, ft)
			}
		}
		run.checkToolCalls(t)
	}
}

// toolsTemplate is the test model's Llama 3 template with tools: listed in a system turn
// when a request offers any, and an assistant's earlier calls written as
// {"name": …, "parameters": …}, the form Ollama reads a call back in.
const toolsTemplate = `{{- if .Tools }}<|start_header_id|>system<|end_header_id|>

You can call these functions: {{ range .Tools }}{{ . }} {{ end }}To call one, answer {"name": NAME, "parameters": {ARGUMENTS}}.<|eot_id|>
{{- end }}
{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>

{{ if .ToolCalls }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "parameters": {{ .Function.Arguments }}}{{ end }}{{ else }}{{ .Content }}{{ end }}<|eot_id|>
{{- end }}<|start_header_id|>assistant<|end_header_id|>

`

// createToolsModel creates (or replaces) o's model with toolsTemplate as llmbench-tiny-tools
// through Ollama's /api/create and returns its name; the test deletes it when it ends, so
// the server is left as it was.
func createToolsModel(t *testing.T, o server) string {
	t.Helper()
	name := "llmbench-tiny-tools"
	t.Cleanup(func() {
		resp, err := o.send(context.Background(), http.MethodDelete, "/api/delete", "", map[string]any{"model": name})
		if err != nil {
			t.Logf("deleting %s: %v", name, err)
			return
		}
		resp.Body.Close()
	})
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	body := map[string]any{"model": name, "from": o.model, "template": toolsTemplate, "stream": false}
	if err := o.doJSON(t.Context(), http.MethodPost, "/api/create", "", body, &out); err != nil || out.Status != "success" {
		t.Fatalf("creating %s from %s: %v %+v", name, o.model, err, out)
	}
	return name
}

// checkToolCalls: each record's tool-call tokens are some of its output tokens, with a
// first tool-call token at or after its first token; summary.json counts the records that
// called a tool and their tokens; the level has a time to first tool-call token exactly when
// some answer called one. It logs how many did.
func (run *benchRun) checkToolCalls(t *testing.T) {
	t.Helper()
	calls, tokens := 0, 0
	for _, r := range run.recs {
		if r.Error != nil {
			continue
		}
		ft, _ := r.FirstToken()
		if r.ToolCallTokens < 0 || int(r.ToolCallTokens) > r.OutputTokens || r.ToolCallTokens > 0 && r.FirstToolCall < ft {
			t.Errorf("--api %s: request %d: %d tool-call tokens of %d, first call %v, first token %v",
				run.api, r.Index, r.ToolCallTokens, r.OutputTokens, r.FirstToolCall, ft)
		}
		if r.ToolCallTokens > 0 {
			calls++
			tokens += int(r.ToolCallTokens)
		}
	}
	lvl := run.level(t)
	got, _ := lvl["tool_calls"].(float64)
	gotTokens, _ := lvl["total_tool_call_tokens"].(float64)
	mets, _ := lvl["metrics"].(map[string]any)
	_, timed := mets["first_tool_call_ms"]
	if int(got) != calls || int(gotTokens) != tokens || timed != (calls > 0) {
		t.Errorf("--api %s: summary.json tool_calls %v (%v tokens), first_tool_call_ms present %v; the records have %d calls (%d tokens)",
			run.api, lvl["tool_calls"], lvl["total_tool_call_tokens"], timed, calls, tokens)
	}
	t.Logf("--api %s: %d of %d answers were tool calls (%d tool-call tokens of %v generated)",
		run.api, calls, len(run.recs), tokens, lvl["total_output_tokens"])
}
