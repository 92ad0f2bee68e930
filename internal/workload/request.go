// Package workload builds the requests a benchmark sends: prompts with exact token counts,
// length distributions, datasets and traces.
package workload

import (
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
)

// Message is one chat message.
type Message = chattemplate.Message

// Request is one request as it will be sent.
type Request struct {
	// Prompt is the text for the completions API, and the single user message for the chat
	// API when Messages is nil. Empty in lengths-only mode (the virtual-clock simulator).
	Prompt   string
	Messages []Message
	// InputTokens is the prompt's exact length under the run's tokenizer: with a chat
	// template (Config.Chat), the length of the whole conversation as the template
	// formats it, which is what the server counts.
	InputTokens int
	// PrefixTokens of the prompt are shared with other requests of the same PrefixGroup
	// (prefix-cache studies); 0 when there is no shared prefix.
	PrefixTokens int
	PrefixGroup  int
	// PrefixHashes identify the prompt's leading blocks of BlockTokens tokens in a trace
	// that records them (mooncake hash_ids): equal hashes mean equal prefixes up to and
	// including that block. A simulator keys its prefix cache on them; nil otherwise.
	PrefixHashes []uint64
	BlockTokens  int
	// OutputTokens is sent as max_tokens (with ignore_eos, the exact output length).
	OutputTokens int
	// Conversation, Turn and Turns place a request in a multi-turn conversation (Turns > 1):
	// request i of a level is turn i%Turns (0-based) of conversation i/Turns, and its
	// Messages carry every earlier turn (user and assistant) plus the new user message.
	// Turn k > 0 must be sent only after turn k-1 finished and ThinkTime passed.
	Conversation, Turn, Turns int
	ThinkTime                 time.Duration
	// Task places the request in an agentic task (Agent): its ThinkTime is then the tool's
	// latency before it.
	Task TaskCall
	// Batch holds the inputs of an embeddings request (Batched), each of its own exact
	// length; InputTokens is their sum.
	Batch []string
	// Query and Documents make a rerank request (Reranked); InputTokens counts the query
	// and every document.
	Query     string
	Documents []string
	// Images go with the prompt (the last user message) as image content parts
	// (WithImages); InputTokens counts the text only.
	Images []Image
	// Tools are the functions the request offers the model (chat and Responses APIs, Ollama's
	// chat), sent as its tools; nil offers none. ToolChoice, when set, is sent as tool_choice.
	Tools      []ToolDef
	ToolChoice ToolChoice
	// Arrival is the request's offset from the level start in a replayed trace.
	Arrival    time.Duration
	HasArrival bool
}

// Source yields the requests of a run. Request is a pure function of the source's config,
// its seed, the level and the index, so a run is reproducible and shards can take slices.
type Source interface {
	Request(level, i int) Request
	// Len is the number of distinct requests of a finite dataset (a trace replays exactly
	// these), or 0 for a synthetic source that can produce any number.
	Len() int
}

// Session is the request's session key: its conversation's (multi-turn) or its agentic
// task's, the unit a server keeps context for, so that a balancer or router can keep it on
// one server; "" for a request of neither.
func (r *Request) Session() string {
	switch {
	case r.Task.Steps > 0:
		return "task-" + strconv.Itoa(r.Task.Task)
	case r.Turns > 1:
		return "conversation-" + strconv.Itoa(r.Conversation)
	}
	return ""
}
