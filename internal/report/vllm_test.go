package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// jsonKind names the JSON type of a value decoded with UseNumber.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// The vllm.json llmbench writes has every aggregate key of a result file written by vLLM's
// own benchmark client (testdata/vllm/README.md), with the same JSON types, so scripts that
// read vLLM's files read ours.
func TestVLLMResultMatchesVLLMFile(t *testing.T) {
	decode := func(b []byte) map[string]any {
		t.Helper()
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber() // for jsonKind
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		return m
	}
	b, err := os.ReadFile("testdata/vllm/llamaserver-chat-c4.json")
	if err != nil {
		t.Fatal(err)
	}
	theirs := decode(b)
	var buf bytes.Buffer
	if err := WriteVLLM(&buf, ladderSummary(t, "ttft<=300ms", []int{4})); err != nil {
		t.Fatal(err)
	}
	ours := decode(buf.Bytes())
	// What vLLM writes and llmbench does not: the run's description, which summary.json
	// carries in its own form, and the per-request arrays, which records.jsonl holds.
	notWritten := map[string]bool{
		"date": true, "backend": true, "model_id": true, "tokenizer_id": true, "best_of": true,
		"num_prompts": true, "burstiness": true,
		"input_lens": true, "output_lens": true, "ttfts": true, "itls": true,
		"generated_texts": true, "errors": true,
		"request_goodput:": true, // vLLM's key at this version, colon included; ours is request_goodput
	}
	for k, v := range theirs {
		if notWritten[k] {
			continue
		}
		o, ok := ours[k]
		if !ok {
			t.Errorf("vLLM writes %q (%v); llmbench does not", k, v)
		} else if jsonKind(o) != jsonKind(v) {
			t.Errorf("%q: llmbench writes %s (%v), vLLM %s (%v)", k, jsonKind(o), o, jsonKind(v), v)
		}
	}
	for k := range notWritten {
		if _, ok := theirs[k]; !ok {
			t.Errorf("the vLLM file has no %q: the list of keys llmbench leaves out is stale", k)
		}
	}
	if g, ok := ours["request_goodput"].(json.Number); !ok || g.String() == "" {
		t.Errorf("request_goodput %v, want a number when an SLO is set", ours["request_goodput"])
	}
}
