package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"sync"
	"time"
)

// TruthLine is one line of the ground-truth file (JSON, one per finished request that was
// given a response id). Times are wall-clock Unix seconds with microsecond precision; the
// client's records carry monotonic offsets, so `llmbench fidelity` aligns the two by the
// run's wall-clock start. Each entry of EventUnix is taken right after the write and flush
// that put that token event on the wire; StepUnix is the instant the generator says the
// event's tokens were ready (sim.Step.At of the last step it carries), so EventUnix minus
// StepUnix is how late the server sent each event.
type TruthLine struct {
	ID           string  `json:"id"`
	Stream       bool    `json:"stream"`
	ReceivedUnix float64 `json:"received_unix"` // when the handler began
	// PromptSHA256 is the SHA-256 of the prompt's text (each message's, or the completion
	// prompt's, followed by a NUL), hex: two runs sent the same prompt when theirs agree. A
	// prompt given as token ids has no text: the hash of nothing.
	PromptSHA256     string    `json:"prompt_sha256"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"` // tokens actually written
	FinishReason     string    `json:"finish_reason,omitempty"`
	EventUnix        []float64 `json:"event_unix"`
	// StepUnix has one entry per event: the end of the last engine step the event carries.
	StepUnix []float64 `json:"step_unix"`
	// EventTokens is each event's token count; omitted when every event carried one.
	EventTokens []int `json:"event_tokens,omitempty"`
	// Fault is the injected fault kind, if one struck; Canceled means the client went away.
	Fault    string `json:"fault,omitempty"`
	Canceled bool   `json:"canceled,omitempty"`
}

// truthLog serialises lines to a buffered writer; safe for concurrent use.
type truthLog struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error // first write error; later lines are dropped and Close reports it
}

func newTruthLog(w io.Writer) *truthLog {
	return &truthLog{w: bufio.NewWriterSize(w, 256<<10)}
}

func (t *truthLog) write(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	_, t.err = t.w.Write(line)
}

func (t *truthLog) flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// truthRecord accumulates one request's truth while it streams.
type truthRecord struct {
	received time.Time
	events   []int64 // Unix µs
	steps    []int64 // Unix µs: each event's step end
	tokens   []int32
	multi    bool // some event carried != 1 tokens
}

// add records an event of n tokens sent at t, whose last step ended at step.
func (r *truthRecord) add(t, step time.Time, n int) {
	r.events = append(r.events, t.UnixMicro())
	r.steps = append(r.steps, step.UnixMicro())
	r.tokens = append(r.tokens, int32(n))
	if n != 1 {
		r.multi = true
	}
}

// appendLine builds the JSON line by hand: the event list can be thousands of numbers long
// and encoding/json would format floats through reflection.
func (r *truthRecord) appendLine(b []byte, id string, stream bool, promptHash string, prompt, completion int, finish string, fault FaultKind, canceled bool) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","stream":`...)
	b = strconv.AppendBool(b, stream)
	b = append(b, `,"received_unix":`...)
	b = appendUnixMicro(b, r.received.UnixMicro())
	b = append(b, `,"prompt_sha256":"`...)
	b = append(b, promptHash...)
	b = append(b, '"')
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	if finish != "" {
		b = append(b, `,"finish_reason":"`...)
		b = append(b, finish...)
		b = append(b, '"')
	}
	b = appendUnixList(b, `,"event_unix":[`, r.events)
	b = appendUnixList(b, `,"step_unix":[`, r.steps)
	if r.multi {
		b = append(b, `,"event_tokens":[`...)
		for i, n := range r.tokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, ']')
	}
	if fault != FaultNone {
		b = append(b, `,"fault":"`...)
		b = append(b, fault.String()...)
		b = append(b, '"')
	}
	if canceled {
		b = append(b, `,"canceled":true`...)
	}
	return append(b, "}\n"...)
}

// appendUnixList appends key, then the µs times as seconds, then ']'.
func appendUnixList(b []byte, key string, us []int64) []byte {
	b = append(b, key...)
	for i, v := range us {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUnixMicro(b, v)
	}
	return append(b, ']')
}

// appendUnixMicro writes µs since the epoch as seconds with exactly six decimals, from
// integers, so no float rounding can move an event.
func appendUnixMicro(b []byte, us int64) []byte {
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1e6, 10)
	frac := us % 1e6
	b = append(b, '.')
	for d := int64(100000); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b
}

// promptSHA256 is TruthLine.PromptSHA256 of a prompt's parts.
func promptSHA256(parts []string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
