package e2e

// The APIs beside chat and completions against real servers: llama-server's Responses API,
// --stream=false, embeddings (llama-server --embeddings --pooling mean) and rerank
// (llama-server --reranking), and Ollama's /api/embed. .ci/llamacpp.sh starts the three
// llama-server instances; .ci/ollama.sh the Ollama server.

import "testing"

// TestLlamaCppResponses: 48 requests at concurrency 4 over /v1/responses, each with exactly
// the requested output tokens by the server's usage (response.completed), one
// response.output_text.delta per token.
func TestLlamaCppResponses(t *testing.T) {
	s := llamacppTarget(t)
	run := runBench(t, s, "openai-responses", llamacppLoad)
	run.checkExact(t)
	run.checkStreamMetrics(t, true)
	run.logFigures(t)
}

// TestLlamaCppStreamFalse: --stream=false over chat completions: exact output counts, E2EL,
// and no TTFT, TPOT, ITL or chunk gap in summary.json.
func TestLlamaCppStreamFalse(t *testing.T) {
	s := llamacppTarget(t)
	l := load{concurrency: 4, requests: 16, input: 64, output: 32}
	run := runBench(t, s, "openai-chat", l, "--stream=false")
	for _, r := range run.recs {
		if r.Error != nil || r.OutputTokens != l.output || r.OutputTokensSource != "usage" || !r.Unstreamed {
			t.Errorf("request %d: error %+v, %d output tokens from %q, unstreamed %v; want none, %d from usage, true",
				r.Index, r.Error, r.OutputTokens, r.OutputTokensSource, r.Unstreamed, l.output)
		}
	}
	run.checkStreamMetrics(t, false)
}

// TestLlamaCppEmbeddings: batches of 8 inputs of 32 tokens; llmbench checks that every
// response has 8 vectors of one dimension (a mismatch would be a response_mismatch failure).
func TestLlamaCppEmbeddings(t *testing.T) {
	s := llamacppTargetAt(t, "LLMBENCH_LLAMACPP_EMBED_URL")
	run := runBench(t, s, "openai-embeddings", load{concurrency: 2, requests: 16, input: 32, output: 1}, "--batch-size", "8")
	run.checkInputs(t, "inputs", 8, 8*32, "inputs_per_s")
}

// TestLlamaCppRerank: a 32-token query and 8 documents of 32 tokens per request; llmbench
// checks that every response scores each of the 8 documents once.
func TestLlamaCppRerank(t *testing.T) {
	s := llamacppTargetAt(t, "LLMBENCH_LLAMACPP_RERANK_URL")
	run := runBench(t, s, "rerank", load{concurrency: 2, requests: 16, input: 32, output: 1}, "--documents", "8", "--query-tokens", "32")
	run.checkInputs(t, "documents", 8, 32+8*32, "documents_per_s")
}

// TestOllamaEmbed: Ollama's native /api/embed with batches of 8.
func TestOllamaEmbed(t *testing.T) {
	o := ollamaTarget(t)
	run := runBench(t, o, "ollama-embed", load{concurrency: 2, requests: 16, input: 32, output: 1}, "--batch-size", "8")
	run.checkInputs(t, "inputs", 8, 8*32, "inputs_per_s")
}

// checkStreamMetrics: summary.json's level has the stream metrics when streamed and none
// of them otherwise (absent, not zero), and E2EL either way.
func (run *benchRun) checkStreamMetrics(t *testing.T, streamed bool) {
	t.Helper()
	mets, _ := run.level(t)["metrics"].(map[string]any)
	for _, k := range []string{"ttft_ms", "tpot_ms", "itl_ms", "chunk_gap_ms", "ttft_from_schedule_ms"} {
		if _, ok := mets[k]; ok != streamed {
			t.Errorf("summary.json metrics.%s present %v, want %v", k, ok, streamed)
		}
	}
	if e, ok := mets["e2el_ms"].(map[string]any); !ok || e["count"] != float64(run.load.requests) {
		t.Errorf("summary.json metrics.e2el_ms = %v, want %d samples", mets["e2el_ms"], run.load.requests)
	}
}

// checkInputs: every measured request of an embeddings or rerank run succeeded (so its
// response matched the request) with n inputs or documents (field) and the given input
// tokens; the level reports perS and input_throughput, and no stream metrics.
func (run *benchRun) checkInputs(t *testing.T, field string, n, tokens int, perS string) {
	t.Helper()
	if len(run.recs) != run.load.requests {
		t.Errorf("%d measured records, want %d", len(run.recs), run.load.requests)
	}
	for _, r := range run.recs {
		got := r.Inputs
		if field == "documents" {
			got = r.Documents
		}
		if r.Error != nil || int(got) != n || r.InputTokens != tokens || r.ServerPromptTokens == 0 {
			t.Errorf("request %d: error %+v, %s %d, input_tokens %d, server prompt tokens %d; want none, %d, %d, > 0",
				r.Index, r.Error, field, got, r.InputTokens, r.ServerPromptTokens, n, tokens)
		}
		if _, ok := r.raw[field]; !ok {
			t.Errorf("request %d: records.jsonl has no %q", r.Index, field)
		}
	}
	lvl := run.level(t)
	for _, k := range []string{perS, "input_throughput"} {
		if v, ok := lvl[k].(float64); !ok || v <= 0 {
			t.Errorf("summary.json levels[0].%s = %v, want > 0", k, lvl[k])
		}
	}
	if got := lvl["completed"]; got != float64(run.load.requests) {
		t.Errorf("completed %v, want %d", got, run.load.requests)
	}
	run.checkStreamMetrics(t, false)
	t.Logf("--api %s: %s %.1f/s, input tokens %.0f/s", run.api, field, lvl[perS], lvl["input_throughput"])
}
