package client

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// streamsDir holds the committed captures of real servers (llama.cpp, Ollama; see its README).
const streamsDir = "testdata/streams"

// openAIStreamsDir returns the folder of the real OpenAI API captures, openai-python's test
// snapshots in ../shared beside the repository. They are not committed (their licence and
// provenance are another project's), so a test that needs them skips without ../shared, or
// fails when LLMBENCH_REQUIRE_SHARED is set, as in CI.
func openAIStreamsDir(t testing.TB) string {
	t.Helper()
	const dir = "../../../shared/streams/openai-python"
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("LLMBENCH_REQUIRE_SHARED") != "" {
			t.Fatalf("LLMBENCH_REQUIRE_SHARED is set but the OpenAI API captures are absent: %v", err)
		}
		t.Skipf("needs the OpenAI API captures in ../shared/streams/openai-python (not committed: openai-python's test data): %v", err)
	}
	return dir
}

// decodeStream runs the client's stream handling (the same code Do runs after the
// response headers) on a body.
func decodeStream(t testing.TB, api string, body io.Reader, tok tokenizer.Tokenizer) record.Record {
	t.Helper()
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: api, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	st := new(streamState)
	st.reset()
	var rec record.Record
	start := time.Now()
	rec.Sent = record.Since(start, time.Now())
	rec.Events.Base = rec.Sent
	c.readStream(ctx, ctx, cancel, start, body, time.Now, nil, st, &rec)
	finish(st, c.tok, &rec)
	return rec
}

// wordTokenizer is a stand-in tokenizer: one token per whitespace-separated word.
type wordTokenizer struct{}

func (wordTokenizer) Name() string { return "words" }
func (wordTokenizer) Encode(s string) []int {
	return make([]int, len(strings.Fields(s)))
}
func (wordTokenizer) Decode([]int) string { return "" }

type streamCase struct {
	api  string
	want streamWant
}

type streamWant struct {
	events   int    // token-carrying events
	tokens   int    // N
	source   string // output_tokens_source
	prompt   int    // server prompt tokens
	kind     string // error kind, "" for success
	id       string // response id prefix
	errText  string // substring of the error message
	timingsN int    // llama.cpp timings predicted_n, when reported
	tool     int    // tool-call tokens
}

// recordedCases are the documented outcomes of the captures: openai-python/ in
// ../shared/streams, the others in testdata/streams. Keys are paths below those folders.
var recordedCases = map[string]streamCase{
	// openai-python: real OpenAI API. Role chunk with content "" does not count;
	// usage arrives on a choices:[] chunk after the finish chunk.
	"openai-python/e2aad469b71d.sse": {APIOpenAIChat, streamWant{events: 30, tokens: 30, source: "usage", prompt: 14, id: "chatcmpl-ABfw"}},
	"openai-python/d61558011839.sse": {APIOpenAIChat, streamWant{events: 177, tokens: 177, source: "usage", prompt: 19, id: "chatcmpl-ABfw"}},
	// Tool-call deltas count: the function name chunk and 10 argument chunks.
	"openai-python/a247c49c5fcd.sse": {APIOpenAIChat, streamWant{events: 11, tokens: 19, source: "usage", prompt: 48, id: "chatcmpl-ABfw", tool: 19}},
	// Refusal deltas are generated text.
	"openai-python/569c877e6942.sse": {APIOpenAIChat, streamWant{events: 11, tokens: 12, source: "usage", prompt: 79, id: "chatcmpl-ABfw"}},
	"openai-python/173417d55340.sse": {APIOpenAIChat, streamWant{events: 10, tokens: 11, source: "usage", prompt: 79, id: "chatcmpl-ABfw"}},
	// llama.cpp: role chunk with content null; usage + timings on a choices:[] chunk.
	"llama.cpp/chat-include_usage.sse": {APIOpenAIChat, streamWant{events: 8, tokens: 8, source: "usage", prompt: 30, id: "chatcmpl-koQP", timingsN: 8}},
	// n=2: both choices' deltas count; no usage, so N is the number of events.
	"llama.cpp/chat-n2.sse":       {APIOpenAIChat, streamWant{events: 8, tokens: 8, source: "events", id: "chatcmpl-1sYB", timingsN: 4}},
	"llama.cpp/chat-no-usage.sse": {APIOpenAIChat, streamWant{events: 3, tokens: 3, source: "events", id: "chatcmpl-bIdf", timingsN: 3}},
	// completions: usage rides on the final chunk that still has choices, always.
	"llama.cpp/completions-include_usage-false.sse": {APIOpenAICompletions, streamWant{events: 4, tokens: 4, source: "usage", prompt: 2, id: "chatcmpl-XXoB", timingsN: 4}},
	"llama.cpp/completions-include_usage.sse":       {APIOpenAICompletions, streamWant{events: 6, tokens: 6, source: "usage", prompt: 5, id: "chatcmpl-yrjF", timingsN: 6}},
	"llama.cpp/completions-no-usage.sse":            {APIOpenAICompletions, streamWant{events: 4, tokens: 4, source: "usage", prompt: 5, id: "chatcmpl-KpxH", timingsN: 4}},
	// Responses API: "event:" lines beside typed data; usage in response.completed, llama.cpp's
	// timings beside "response"; no [DONE].
	"llama.cpp/responses-stream.sse": {APIOpenAIResponses, streamWant{events: 8, tokens: 8, source: "usage", prompt: 13, id: "resp_b3rP", timingsN: 8}},
	// A request offering tools with tool_choice required, to a model whose template does not
	// describe tools: llama-server (--jinja) accepts it and answers with text.
	"llama.cpp/chat-tools-required.sse": {APIOpenAIChat, streamWant{events: 8, tokens: 8, source: "usage", prompt: 17, id: "chatcmpl-bAhL", timingsN: 8}},
	// Ollama answers a tool call whole, in one chunk after its generation (it holds the text
	// back while it looks for a call): all 22 of usage's tokens are the call's.
	"ollama-0.6.5/chat-tool-call.sse": {APIOpenAIChat, streamWant{events: 1, tokens: 22, source: "usage", prompt: 89, id: "chatcmpl-194", tool: 22}},
	// Ollama: every chunk repeats the role; the last content chunk is "" with the finish.
	"ollama-0.6.5/chat-include_usage.sse": {APIOpenAIChat, streamWant{events: 8, tokens: 8, source: "usage", prompt: 3, id: "chatcmpl-779"}},
	// Zeros in usage on every chunk, then the real usage: the last non-zero wins.
	"ollama-0.6.5/completions-include_usage.sse": {APIOpenAICompletions, streamWant{events: 6, tokens: 6, source: "usage", prompt: 5, id: "cmpl-70"}},
	"ollama-0.6.5/completions-no-usage.sse":      {APIOpenAICompletions, streamWant{events: 4, tokens: 4, source: "events", id: "cmpl-379"}},
	// The repeat-limit abort: HTTP 200, no finish_reason, no usage, no [DONE].
	"ollama-0.6.5/chat-greedy-repeat-abort.sse": {APIOpenAIChat, streamWant{events: 31, tokens: 31, source: "events", id: "chatcmpl-638", kind: record.KindIncomplete}},
	// A capture cut by the recording client in the middle of a line.
	"ollama-0.6.5/chat-max_completion_tokens.HEAD-ONLY.sse": {APIOpenAIChat, streamWant{events: 8, tokens: 8, source: "events", id: "chatcmpl-382", kind: record.KindIncomplete}},
}

// TestRecordedStreams checks every committed capture against the token counts and outcomes
// its README documents.
func TestRecordedStreams(t *testing.T) {
	checkRecordedStreams(t, streamsDir, "llama.cpp", "ollama-0.6.5")
}

// TestRecordedOpenAIStreams does the same for the captures of the real OpenAI API.
func TestRecordedOpenAIStreams(t *testing.T) {
	dir := openAIStreamsDir(t)
	checkRecordedStreams(t, filepath.Dir(dir), filepath.Base(dir))
}

// checkRecordedStreams decodes every capture in root's subfolders dirs and checks it
// against recordedCases, all of whose entries in those folders must be found.
func checkRecordedStreams(t *testing.T, root string, dirs ...string) {
	t.Helper()
	cases := map[string]streamCase{}
	var files []string
	for _, dir := range dirs {
		for rel, tc := range recordedCases {
			if strings.HasPrefix(rel, dir+"/") {
				cases[rel] = tc
			}
		}
		f, _ := filepath.Glob(filepath.Join(root, dir, "*.sse"))
		files = append(files, f...)
	}
	seen := 0
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.Contains(rel, "/err-") {
			continue // error replies, not streams: TestReplayedCaptures checks them
		}
		tc, ok := cases[rel]
		if !ok {
			t.Errorf("%s: a recorded stream without expectations; add it to this table", rel)
			continue
		}
		seen++
		t.Run(rel, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rec := decodeStream(t, tc.api, f, nil)
			checkRecord(t, rec, tc.want)

			// The same stream split into 7-byte reads must give the same record.
			b, _ := os.ReadFile(path)
			rec2 := decodeStream(t, tc.api, &pieceReader{pieces: chunks(string(b), 7)}, nil)
			checkRecord(t, rec2, tc.want)
		})
	}
	if seen != len(cases) {
		t.Errorf("found %d of the %d expected captures", seen, len(cases))
	}
}

func checkRecord(t *testing.T, rec record.Record, w streamWant) {
	t.Helper()
	kind := ""
	if rec.Error != nil {
		kind = rec.Error.Kind
	}
	if kind != w.kind {
		t.Errorf("error %+v, want kind %q", rec.Error, w.kind)
	}
	if w.errText != "" && (rec.Error == nil || !strings.Contains(rec.Error.Message, w.errText)) {
		t.Errorf("error %+v, want a message containing %q", rec.Error, w.errText)
	}
	if rec.Events.Len() != w.events {
		t.Errorf("token events %d, want %d", rec.Events.Len(), w.events)
	}
	if rec.OutputTokens != w.tokens || rec.OutputTokensSource != w.source {
		t.Errorf("output tokens %d from %q, want %d from %q", rec.OutputTokens, rec.OutputTokensSource, w.tokens, w.source)
	}
	if rec.ServerPromptTokens != w.prompt {
		t.Errorf("server prompt tokens %d, want %d", rec.ServerPromptTokens, w.prompt)
	}
	if !strings.HasPrefix(rec.ResponseID, w.id) {
		t.Errorf("response id %q, want prefix %q", rec.ResponseID, w.id)
	}
	if int(rec.ToolCallTokens) != w.tool {
		t.Errorf("tool-call tokens %d, want %d", rec.ToolCallTokens, w.tool)
	}
	if w.timingsN != 0 && (rec.Server == nil || rec.Server.OutputTokens != w.timingsN) {
		t.Errorf("server timings %+v, want predicted_n %d", rec.Server, w.timingsN)
	}
}

func TestRecordedStreamsWithTokenizer(t *testing.T) {
	f, err := os.Open(filepath.Join(streamsDir, "llama.cpp", "chat-no-usage.sse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Deltas "ɹ", "►", " song": 2 words in all, 1 per delta.
	rec := decodeStream(t, APIOpenAIChat, f, wordTokenizer{})
	if rec.OutputTokens != 2 || rec.OutputTokensSource != record.SourceTokenizer {
		t.Errorf("output %d from %q, want 2 from tokenizer", rec.OutputTokens, rec.OutputTokensSource)
	}
	if rec.Events.Len() != 3 || rec.Events.Tokens() != 3 {
		t.Errorf("events %d carrying %d tokens, want 3 and 3", rec.Events.Len(), rec.Events.Tokens())
	}
}
