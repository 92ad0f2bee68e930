// Package sim is the simulated inference server: a continuous-batching engine driven by a
// cost model, on a wall clock (serve, the in-process default target) or a virtual clock
// (simulate).
package sim

import "time"

// SeqRequest is one generation request as the engine sees it.
type SeqRequest struct {
	ID           string
	PromptTokens int
	// PrefixHashes are hashes of the prompt's full KV blocks, for prefix caching; may be nil.
	PrefixHashes []uint64
	MaxTokens    int
	// IgnoreEOS makes the sequence run to MaxTokens; otherwise it stops at a seeded
	// random length within it.
	IgnoreEOS bool
	// Session is the request's session key (a conversation or agentic task; "" for none):
	// the session router keeps a session on one replica.
	Session string
}

// Step reports the tokens one engine step emitted for one sequence.
type Step struct {
	At           time.Time // wall-clock instant the step finished (monotonic reading included)
	Tokens       int       // tokens emitted for this sequence by this step (usually 1)
	Done         bool
	FinishReason string // "length" or "stop" when Done
	// Cached is the prompt tokens the sequence's admission found in the prefix cache
	// (Virtual.PromptCached's figure): what a server's usage says as cached_tokens.
	Cached int
}

// EngineStats is a snapshot of the engine for /metrics.
type EngineStats struct {
	Running          int
	Waiting          int
	KVUsage          float64 // fraction of KV blocks in use, 0..1
	Preemptions      uint64
	PromptTokens     uint64 // prompt tokens processed (prefill work done)
	GenerationTokens uint64
	PrefixHits       uint64 // prompt tokens served from the prefix cache
	PrefixQueries    uint64 // prompt tokens looked up in the prefix cache
	// Speculative decoding: a sequence's drafts verified, their tokens, and the drafted
	// tokens accepted (vLLM's spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens).
	SpecDrafts, SpecDraftTokens, SpecAcceptedTokens uint64
	// BusySeconds is the steps' time weighted by their busy share (power.go), s, and
	// StepSeconds their whole time: what the power estimate reads.
	BusySeconds, StepSeconds float64
}
