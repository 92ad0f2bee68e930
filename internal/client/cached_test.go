package client

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// llama.cpp's timings.cache_n, what it served of the prompt from its cache, becomes the
// record's CachedPromptTokens (0 included: said, and none cached); so does usage's
// prompt_tokens_details.cached_tokens (input_tokens_details in Responses), which the same
// captures carry; a stream with neither (Ollama) says nothing.
func TestCachedPromptTokensFromTimings(t *testing.T) {
	for _, c := range []struct {
		file, api string
		cached    int32
		said      bool
	}{
		{"llama.cpp/chat-n2.sse", APIOpenAIChat, 29, true},
		{"llama.cpp/completions-include_usage.sse", APIOpenAICompletions, 4, true},
		{"llama.cpp/chat-no-usage.sse", APIOpenAIChat, 0, true},
		{"llama.cpp/chat-include_usage.sse", APIOpenAIChat, 10, true},
		{"llama.cpp/responses-stream.sse", APIOpenAIResponses, 12, true},
		{"ollama-0.6.5/chat-include_usage.sse", APIOpenAIChat, 0, false},
		{"ollama-0.6.5/completions-include_usage.sse", APIOpenAICompletions, 0, false},
	} {
		f, err := os.Open(filepath.Join("testdata", "streams", c.file))
		if err != nil {
			t.Fatal(err)
		}
		rec := decodeStream(t, c.api, f, nil)
		f.Close()
		if rec.CachedPromptTokens != c.cached || rec.HasCachedPromptTokens != c.said {
			t.Errorf("%s: cached %d (said %v), want %d (%v)", c.file, rec.CachedPromptTokens, rec.HasCachedPromptTokens, c.cached, c.said)
		}
	}
}

// timingsMember is llama.cpp's "timings" object in a capture's data line (it holds no
// nested object).
var timingsMember = regexp.MustCompile(`,"timings":\{[^}]*\}`)

// The real llama.cpp captures with their timings taken out, as a server without them sends
// usage: prompt_tokens_details.cached_tokens (input_tokens_details in Responses) alone
// gives the record's cached tokens.
func TestCachedTokensFromRecordedUsage(t *testing.T) {
	for _, c := range []struct {
		file, api string
		cached    int32
	}{
		{"llama.cpp/chat-include_usage.sse", APIOpenAIChat, 10},
		{"llama.cpp/completions-include_usage.sse", APIOpenAICompletions, 4},
		{"llama.cpp/completions-include_usage-false.sse", APIOpenAICompletions, 1},
		{"llama.cpp/responses-stream.sse", APIOpenAIResponses, 12},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "streams", c.file))
		if err != nil {
			t.Fatal(err)
		}
		stripped := timingsMember.ReplaceAll(b, nil)
		if strings.Contains(string(stripped), `"timings"`) || len(stripped) == len(b) {
			t.Fatalf("%s: the timings were not taken out", c.file)
		}
		rec := decodeStream(t, c.api, strings.NewReader(string(stripped)), nil)
		if rec.Error != nil || rec.Server != nil {
			t.Fatalf("%s: error %v, server timings %+v", c.file, rec.Error, rec.Server)
		}
		if !rec.HasCachedPromptTokens || rec.CachedPromptTokens != c.cached {
			t.Errorf("%s: cached %d (said %v), want %d", c.file, rec.CachedPromptTokens, rec.HasCachedPromptTokens, c.cached)
		}
	}
}

// The real OpenAI API captures (gpt-4o, 2024-09) carry usage without prompt_tokens_details:
// the record says nothing of the cache, which is not 0.
func TestCachedTokensAbsentFromRecordedOpenAI(t *testing.T) {
	dir := openAIStreamsDir(t)
	for name, c := range recordedCases {
		if !strings.HasPrefix(name, "openai-python/") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, strings.TrimPrefix(name, "openai-python/")))
		if err != nil {
			t.Fatal(err)
		}
		rec := decodeStream(t, c.api, f, nil)
		f.Close()
		if rec.ServerPromptTokens == 0 || rec.HasCachedPromptTokens {
			t.Errorf("%s: prompt tokens %d, cached %d (said %v): want the usage without cached tokens", name, rec.ServerPromptTokens, rec.CachedPromptTokens, rec.HasCachedPromptTokens)
		}
	}
}

// Streams in the formats vLLM and SGLang send (from their source: vLLM's
// entrypoints/openai chat_completion and completion serving.py put prompt_tokens_details
// {cached_tokens} in the final usage only with --enable-prompt-tokens-details and only when
// something was cached; SGLang's usage_processor.py likewise with --enable-cache-report;
// Responses' usage has input_tokens_details; DeepSeek's API says prompt_cache_hit_tokens).
// Whatever says nothing (no details, null details, a null count) leaves the record without
// cached tokens, not at 0; an explicit 0 is 0.
func TestCachedTokensFromUsageFormats(t *testing.T) {
	const (
		chatHead = `data: {"id":"chatcmpl-5f0c","object":"chat.completion.chunk","created":1764900000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"chatcmpl-5f0c","object":"chat.completion.chunk","created":1764900000,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"chatcmpl-5f0c","object":"chat.completion.chunk","created":1764900000,"model":"m","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}` + "\n\n"
		chatUsage = `data: {"id":"chatcmpl-5f0c","object":"chat.completion.chunk","created":1764900000,"model":"m","choices":[],"usage":{"prompt_tokens":1040,"total_tokens":1042,"completion_tokens":2%s}}` + "\n\n" +
			"data: [DONE]\n\n"
		completions = `data: {"id":"cmpl-9a1","object":"text_completion","created":1764900000,"model":"m","choices":[{"index":0,"text":"Hello","logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\n" +
			`data: {"id":"cmpl-9a1","object":"text_completion","created":1764900000,"model":"m","choices":[{"index":0,"text":" there","logprobs":null,"finish_reason":"length","stop_reason":null}]}` + "\n\n" +
			`data: {"id":"cmpl-9a1","object":"text_completion","created":1764900000,"model":"m","choices":[],"usage":{"prompt_tokens":1040,"total_tokens":1042,"completion_tokens":2%s}}` + "\n\n" +
			"data: [DONE]\n\n"
		responses = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hello\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1040,\"output_tokens\":1,\"total_tokens\":1041%s}}}\n\n"
	)
	for _, c := range []struct {
		name, api, format, usage string
		cached                   int32
		said                     bool
	}{
		{"vllm chat hit", APIOpenAIChat, chatHead + chatUsage, `,"prompt_tokens_details":{"cached_tokens":1024}`, 1024, true},
		{"vllm chat nothing cached or not enabled", APIOpenAIChat, chatHead + chatUsage, ``, 0, false},
		{"details null", APIOpenAIChat, chatHead + chatUsage, `,"prompt_tokens_details":null`, 0, false},
		{"count null", APIOpenAIChat, chatHead + chatUsage, `,"prompt_tokens_details":{"cached_tokens":null}`, 0, false},
		{"openai zero", APIOpenAIChat, chatHead + chatUsage, `,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}`, 0, true},
		{"sglang with image tokens", APIOpenAIChat, chatHead + chatUsage, `,"prompt_tokens_details":{"cached_tokens":512,"image_tokens":256},"reasoning_tokens":0`, 512, true},
		{"deepseek", APIOpenAIChat, chatHead + chatUsage, `,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":400`, 640, true},
		{"negative", APIOpenAIChat, chatHead + chatUsage, `,"prompt_tokens_details":{"cached_tokens":-5}`, 0, false},
		{"vllm completions hit", APIOpenAICompletions, completions, `,"prompt_tokens_details":{"cached_tokens":1008}`, 1008, true},
		{"responses", APIOpenAIResponses, responses, `,"input_tokens_details":{"cached_tokens":768},"output_tokens_details":{"reasoning_tokens":0}`, 768, true},
		{"responses without details", APIOpenAIResponses, responses, ``, 0, false},
	} {
		body := strings.ReplaceAll(c.format, "%s", c.usage)
		rec := decodeStream(t, c.api, strings.NewReader(body), nil)
		if rec.Error != nil || rec.ServerPromptTokens != 1040 {
			t.Fatalf("%s: error %v, prompt tokens %d", c.name, rec.Error, rec.ServerPromptTokens)
		}
		if rec.CachedPromptTokens != c.cached || rec.HasCachedPromptTokens != c.said {
			t.Errorf("%s: cached %d (said %v), want %d (%v)", c.name, rec.CachedPromptTokens, rec.HasCachedPromptTokens, c.cached, c.said)
		}
	}
}

// A whole (non-streamed) response says its cached tokens in the same usage fields; a
// value that is not a count says nothing and fails nothing.
func TestCachedTokensFromWholeResponse(t *testing.T) {
	for _, c := range []struct {
		name, api, body string
		cached          int32
		said            bool
	}{
		{"vllm chat", APIOpenAIChat, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"length"}],"usage":{"prompt_tokens":1040,"total_tokens":1042,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1024}}}`, 1024, true},
		{"vllm chat null details", APIOpenAIChat, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"length"}],"usage":{"prompt_tokens":1040,"total_tokens":1042,"completion_tokens":2,"prompt_tokens_details":null}}`, 0, false},
		{"no details", APIOpenAIChat, `{"id":"c","choices":[{"message":{"content":"Hello there"}}],"usage":{"prompt_tokens":1040,"completion_tokens":2}}`, 0, false},
		{"odd count", APIOpenAIChat, `{"id":"c","choices":[{"message":{"content":"Hello there"}}],"usage":{"prompt_tokens":1040,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":"many"}}}`, 0, false},
		{"completions", APIOpenAICompletions, `{"id":"c","choices":[{"text":"Hello there"}],"usage":{"prompt_tokens":1040,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`, 0, true},
		{"responses", APIOpenAIResponses, `{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hello there"}]}],"usage":{"input_tokens":1040,"output_tokens":2,"input_tokens_details":{"cached_tokens":960}}}`, 960, true},
		{"deepseek", APIOpenAIChat, `{"id":"c","choices":[{"message":{"content":"Hello there"}}],"usage":{"prompt_tokens":1040,"completion_tokens":2,"prompt_cache_hit_tokens":640}}`, 640, true},
	} {
		cl, err := New(Config{BaseURL: "http://127.0.0.1:1", API: c.api, NoStream: true})
		if err != nil {
			t.Fatal(err)
		}
		var rec record.Record
		cl.whole([]byte(c.body), 5*time.Millisecond, workload.Request{}, &rec)
		if rec.Error != nil || rec.OutputTokens != 2 || rec.ServerPromptTokens != 1040 {
			t.Fatalf("%s: error %v, output %d, prompt %d", c.name, rec.Error, rec.OutputTokens, rec.ServerPromptTokens)
		}
		if rec.CachedPromptTokens != c.cached || rec.HasCachedPromptTokens != c.said {
			t.Errorf("%s: cached %d (said %v), want %d (%v)", c.name, rec.CachedPromptTokens, rec.HasCachedPromptTokens, c.cached, c.said)
		}
	}
}
