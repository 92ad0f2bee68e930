package workload

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// Config describes the requests of a run.
type Config struct {
	// Dataset is "random" (the default), "jsonl:PATH", "sharegpt:PATH", "mooncake:PATH" or
	// "azure:PATH".
	Dataset string
	// InputTokens is the prompt length of synthetic prompts (random). Datasets bring their
	// own prompts, and traces their own lengths.
	InputTokens Dist
	// OutputTokens is the output length (max_tokens). Datasets that carry output lengths
	// (sharegpt replies, jsonl output_tokens, traces) use theirs; this fills rows without.
	OutputTokens Dist
	// PrefixTokens > 0 starts every synthetic prompt with one of PrefixGroups shared
	// prefixes of exactly that many tokens (prefix-cache studies). Prompts are then at
	// least PrefixTokens+1 tokens long, so each still has its own part.
	PrefixTokens, PrefixGroups int
	Seed                       int64
	// LengthsOnly skips prompt text (the virtual-clock simulator needs only lengths).
	LengthsOnly bool
	// TraceSpeed divides a trace's arrival offsets: 2 replays twice as fast. 0 means 1.
	TraceSpeed float64
	// TraceOffset starts a trace's replay at this time of the trace (its own time from its
	// first request, before TraceSpeed): earlier rows are dropped, the rest shifted to 0.
	TraceOffset time.Duration
	// BlockTokens is the token count of one mooncake hash_id block; 0 means 512, the
	// block size of the published Mooncake traces.
	BlockTokens int
	// Turns > 1 makes multi-turn conversations: request i is turn i%Turns of
	// conversation i/Turns and carries the earlier turns as history. ThinkTime is the
	// user's pause between a reply and the next turn.
	Turns     int
	ThinkTime time.Duration
	// Chat, when set, counts a conversation as the server counts a chat request (the model's
	// chat template applied): synthetic prompts are then sized, and dataset prompts counted,
	// as the formatted conversation (template tokens included), so the server's
	// prompt_tokens equals InputTokens. nil counts message text alone (completions, or no
	// template known).
	Chat ChatCounter
	// OneMessage says the API sends the prompt alone, which the server formats as one user
	// message (Ollama's /api/generate): a dataset's conversation is counted as its joined
	// text in one message, as it is sent.
	OneMessage bool
	// Agent, when On, makes agentic tasks of the random dataset's lengths: InputTokens is
	// each task's first prompt, OutputTokens each call's answer (agent.go).
	Agent Agent
}

// ChatCounter counts a conversation's prompt tokens as the server counts a chat request.
type ChatCounter interface {
	// CountChat is msgs' token count, formatted with the generation prompt; an error is a
	// conversation the template (or the server) refuses, or a server that did not answer.
	CountChat(msgs []Message) (int, error)
	// Source names the formatting, for summaries: a template file, or "server".
	Source() string
}

// ChatWatch counts with a ChatCounter and keeps what it failed to count: a source sizes a
// conversation it cannot count by its message text, and the run says how many were.
type ChatWatch struct {
	ChatCounter
	mu     sync.Mutex
	failed int
	first  error
}

// WatchChat wraps c.
func WatchChat(c ChatCounter) *ChatWatch { return &ChatWatch{ChatCounter: c} }

// CountChat counts msgs with the wrapped counter, keeping a failure.
func (w *ChatWatch) CountChat(msgs []Message) (int, error) {
	n, err := w.ChatCounter.CountChat(msgs)
	if err != nil {
		w.mu.Lock()
		if w.failed++; w.first == nil {
			w.first = err
		}
		w.mu.Unlock()
	}
	return n, err
}

// Failures is how many conversations could not be counted, and the first reason.
func (w *ChatWatch) Failures() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed, w.first
}

// TemplateChat counts conversations with a chat template and the model's tokenizer.
func TemplateChat(t *chattemplate.Template, tok tokenizer.Tokenizer) ChatCounter {
	return templateChat{t, tok}
}

type templateChat struct {
	t   *chattemplate.Template
	tok tokenizer.Tokenizer
}

func (c templateChat) CountChat(msgs []Message) (int, error) {
	text, err := c.t.Render(msgs)
	if err != nil {
		return 0, err
	}
	return len(c.tok.Encode(text)), nil
}

func (c templateChat) Source() string { return c.t.Path() }

// ChatPrefixTokens is the tokens the chat template puts before every prompt's text (what
// a prompt cache serves of any two conversations): the common start of two one-message
// conversations' tokens. 0 when c is not a chat template (none, or the server's own).
func ChatPrefixTokens(c ChatCounter) int {
	if w, ok := c.(*ChatWatch); ok {
		c = w.ChatCounter
	}
	tc, ok := c.(templateChat)
	if !ok {
		return 0
	}
	var ids [2][]int
	for i, text := range []string{"Alpha beta gamma", "Zulu yankee xray"} {
		s, err := tc.t.Render([]Message{{Role: "user", Content: text}})
		if err != nil {
			return 0
		}
		ids[i] = tc.tok.Encode(s)
	}
	n := 0
	for n < min(len(ids[0]), len(ids[1])) && ids[0][n] == ids[1][n] {
		n++
	}
	return n
}

// Dataset kinds.
const (
	DatasetRandom   = "random"
	DatasetJSONL    = "jsonl"
	DatasetShareGPT = "sharegpt"
	DatasetMooncake = "mooncake"
	DatasetAzure    = "azure"
	DatasetAgent    = "agent" // recorded agent sessions (agenttrace.go)
)

// datasetKind splits "kind:PATH".
func (c Config) datasetKind() (kind, path string) {
	if c.Dataset == "" || c.Dataset == DatasetRandom {
		return DatasetRandom, ""
	}
	kind, path, _ = strings.Cut(c.Dataset, ":")
	return kind, path
}

func (c Config) synthetic() bool {
	k, _ := c.datasetKind()
	return k == DatasetRandom || k == DatasetAzure || k == DatasetMooncake || k == DatasetAgent
}

// Validate reports every problem at once; those whose words a command says in its own terms
// (the fields it sets together) are *fielderr.Error on the Config's fields.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	kind, path := c.datasetKind()
	switch kind {
	case DatasetRandom:
		if c.InputTokens.IsZero() {
			add("input tokens: required for the random dataset")
		} else if err := c.InputTokens.Validate(); err != nil {
			add("input tokens: %v", err)
		}
	case DatasetJSONL, DatasetShareGPT, DatasetMooncake, DatasetAzure, DatasetAgent:
		if path == "" {
			add("dataset %q: missing path (%s:PATH)", c.Dataset, kind)
		} else if _, err := os.Stat(path); err != nil {
			add("dataset %q: %v", c.Dataset, err)
		}
	default:
		add("dataset %q: unknown kind %q (want random, jsonl:PATH, sharegpt:PATH, mooncake:PATH, azure:PATH or agent:PATH)", c.Dataset, kind)
	}
	if kind == DatasetRandom && c.OutputTokens.IsZero() {
		add("output tokens: required for the random dataset")
	} else if !c.OutputTokens.IsZero() {
		if err := c.OutputTokens.Validate(); err != nil {
			add("output tokens: %v", err)
		}
	}
	if c.PrefixTokens < 0 || c.PrefixTokens > MaxTokens {
		add("prefix tokens: %d must be in 0..%d", c.PrefixTokens, MaxTokens)
	}
	if c.PrefixGroups < 0 {
		add("prefix groups: %d is negative", c.PrefixGroups)
	}
	if c.PrefixTokens > 0 {
		if kind != DatasetRandom && kind != DatasetAzure {
			add("prefix tokens: shared prefixes apply to synthetic prompts (random, azure), not to %s", kind)
		}
		if kind == DatasetRandom && !c.InputTokens.IsZero() && !c.InputTokens.Clamped() && c.InputTokens.Min() <= c.PrefixTokens {
			add("prefix tokens: %d leaves no room in prompts of %s tokens (each prompt needs at least one token of its own)", c.PrefixTokens, c.InputTokens)
		}
	} else if c.PrefixGroups > 1 {
		errs = append(errs, fielderr.New("PrefixGroups,PrefixTokens", "%d groups need prefix tokens > 0", c.PrefixGroups))
	}
	if c.TraceSpeed < 0 || c.TraceSpeed != c.TraceSpeed {
		add("trace speed: %v must be > 0", c.TraceSpeed)
	}
	if c.TraceOffset < 0 {
		add("trace offset: %v is negative", c.TraceOffset)
	} else if c.TraceOffset > 0 && kind != DatasetMooncake && kind != DatasetAzure {
		add("trace offset: applies to a trace with timestamps (mooncake:, azure:), not to %s", kind)
	}
	if c.BlockTokens < 0 {
		add("block tokens: %d is negative", c.BlockTokens)
	}
	if c.Turns < 0 {
		add("turns: %d is negative", c.Turns)
	}
	if c.ThinkTime < 0 {
		add("think time: %v is negative", c.ThinkTime)
	}
	if c.Turns > 1 && kind != DatasetRandom {
		add("turns: multi-turn conversations are synthesised for the random dataset only, not %s", kind)
	}
	if c.Turns > 1 && c.PrefixTokens > 0 {
		add("turns: shared prefixes and multi-turn conversations do not combine (the history is the shared prefix)")
	}
	errs = append(errs, c.agentErrors(kind)...)
	if c.Agent.On() && kind != DatasetAgent { // a trace's sessions bring their own calls
		errs = append(errs, c.Agent.validate()...)
	} else if c.ThinkTime > 0 && c.Turns <= 1 {
		add("think time: %v needs turns > 1", c.ThinkTime)
	}
	return errors.Join(errs...)
}

func (c Config) traceSpeed() float64 {
	if c.TraceSpeed <= 0 {
		return 1
	}
	return c.TraceSpeed
}

func (c Config) blockTokens() int {
	if c.BlockTokens <= 0 {
		return 512
	}
	return c.BlockTokens
}

func (c Config) prefixGroups() int { return max(1, c.PrefixGroups) }
