package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/llmbench/llmbench/internal/record"
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
	sum := ladderSummary(t, "ttft<=300ms", []int{4})
	reqs := &VLLMRequests{}
	recs := levelRecords(0, 4, 60, 7)
	for i := range recs {
		if i%2 == 0 { // --save-text: generated_texts carries the text; "" where none was kept
			txt := fmt.Sprintf("answer %d", recs[i].Index)
			recs[i].Text = &txt
		}
		reqs.Add(&recs[i])
	}
	var buf bytes.Buffer
	if err := WriteVLLM(&buf, sum, 0, reqs); err != nil {
		t.Fatal(err)
	}
	ours := decode(buf.Bytes())
	// Every key vLLM writes, the per-request arrays included (vLLM's "request_goodput:" too).
	notWritten := map[string]bool{}
	for k, v := range theirs {
		if notWritten[k] {
			continue
		}
		o, ok := ours[k]
		if !ok {
			t.Errorf("vLLM writes %q (%v); llmbench does not", k, v)
		} else if jsonKind(o) != jsonKind(v) && !(v == nil && jsonKind(o) == "a number") { // vLLM's null: none measured
			t.Errorf("%q: llmbench writes %s (%v), vLLM %s (%v)", k, jsonKind(o), o, jsonKind(v), v)
		}
	}
	// The arrays: one entry per measured request, in request order, from the registry's
	// derivations (TTFT; chunk gaps, vLLM's "itl"), in seconds.
	var arr struct {
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		InputLens  []int       `json:"input_lens"`
		OutputLens []int       `json:"output_lens"`
		Errors     []string    `json:"errors"`
		Texts      []string    `json:"generated_texts"`
	}
	if err := json.Unmarshal(buf.Bytes(), &arr); err != nil {
		t.Fatal(err)
	}
	var measured []record.Record
	for _, r := range recs {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	n := len(measured)
	if len(arr.TTFTs) != n || len(arr.ITLs) != n || len(arr.InputLens) != n || len(arr.OutputLens) != n || len(arr.Errors) != n || len(arr.Texts) != n {
		t.Fatalf("arrays of %d/%d/%d/%d/%d/%d, want %d", len(arr.TTFTs), len(arr.ITLs), len(arr.InputLens), len(arr.OutputLens), len(arr.Errors), len(arr.Texts), n)
	}
	for i, r := range measured {
		if r.Error != nil {
			if arr.Errors[i] == "" || arr.TTFTs[i] != 0 || arr.OutputLens[i] != 0 {
				t.Errorf("failed request %d: %q %v %v", i, arr.Errors[i], arr.TTFTs[i], arr.OutputLens[i])
			}
			continue
		}
		if want := ""; r.Text != nil && arr.Texts[i] != *r.Text || r.Text == nil && arr.Texts[i] != want {
			t.Errorf("request %d: generated text %q, want %v", i, arr.Texts[i], r.Text)
		}
		ft, _ := r.FirstToken()
		if want := (ft - r.Sent).Seconds(); math.Abs(arr.TTFTs[i]-want) > 1e-9 || arr.Errors[i] != "" ||
			len(arr.ITLs[i]) != r.Events.Len()-1 || arr.OutputLens[i] != r.OutputTokens || arr.InputLens[i] != r.InputTokens {
			t.Errorf("request %d: ttft %v (want %v), %d itls for %d events, lens %d/%d", i, arr.TTFTs[i], want, len(arr.ITLs[i]), r.Events.Len(), arr.InputLens[i], arr.OutputLens[i])
		}
	}
	if ours["backend"] != "openai-chat" || ours["model_id"] != "test-model" || ours["tokenizer_id"] != "o200k_base" ||
		ours["date"] != "20260102-030405" || ours["num_prompts"] != json.Number("60") {
		t.Errorf("run description: %v %v %v %v %v", ours["backend"], ours["model_id"], ours["tokenizer_id"], ours["date"], ours["num_prompts"])
	}
	if g, ok := ours["request_goodput:"].(json.Number); !ok || g.String() == "" {
		t.Errorf("request_goodput %v, want a number when an SLO is set", ours["request_goodput"])
	}
}
