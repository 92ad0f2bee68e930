// Package fidelity measures the client's own measurement error: it joins a run's records to
// the simulator's ground truth (`llmbench serve --truth`) by response id, pairs each token
// event the client recorded with the one the server sent, and reports how late the client
// saw each event and how far off its TTFT and ITL are.
package fidelity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/llmbench/llmbench/internal/record"
)

// Truth is one request as the simulator served it. Times are Unix microseconds (wall clock).
type Truth struct {
	ID       string
	Received int64 // when the server's handler began
	// PromptSHA256 is the hash of the prompt's text (empty in files from before it was
	// written) and PromptTokens its tokens: two runs sent the same prompt when both agree.
	PromptSHA256 string
	PromptTokens int
	Events       []int64 // when each token event had been written and flushed
	Steps        []int64 // when each event's last engine step ended; nil in files without step_unix
	Tokens       []int32 // tokens per event; nil when every event carried one
	Fault        string  // injected fault, if one struck
	Canceled     bool    // the client went away
}

// truthLine is the JSON shape of one --truth line (server.TruthLine). Numbers are read as
// text so that µs survive exactly: a float64 of Unix seconds cannot hold every µs.
type truthLine struct {
	ID           string        `json:"id"`
	ReceivedUnix json.Number   `json:"received_unix"`
	PromptSHA256 string        `json:"prompt_sha256"`
	PromptTokens int           `json:"prompt_tokens"`
	EventUnix    []json.Number `json:"event_unix"`
	StepUnix     []json.Number `json:"step_unix"`
	EventTokens  []int32       `json:"event_tokens"`
	Fault        string        `json:"fault"`
	Canceled     bool          `json:"canceled"`
}

// ReadTruth reads a ground-truth file: one JSON object per line. Errors name the line. A
// truncated last line (the server was killed mid-write) is an error too, since the lines
// before it are intact but the caller should know the file is incomplete.
func ReadTruth(r io.Reader) (map[string]*Truth, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	out := map[string]*Truth{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		t, err := parseTruthLine(b)
		if err != nil {
			return out, fmt.Errorf("truth line %d: %w", line, err)
		}
		if _, dup := out[t.ID]; dup {
			return out, fmt.Errorf("truth line %d: response id %q appears twice", line, t.ID)
		}
		out[t.ID] = t
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("truth: %w", err)
	}
	return out, nil
}

func parseTruthLine(b []byte) (*Truth, error) {
	var j truthLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		return nil, err
	}
	if j.ID == "" {
		return nil, errors.New(`missing "id"`)
	}
	if j.ReceivedUnix == "" {
		return nil, errors.New(`missing "received_unix"`)
	}
	t := &Truth{ID: j.ID, PromptSHA256: j.PromptSHA256, PromptTokens: j.PromptTokens, Fault: j.Fault, Canceled: j.Canceled,
		Events: make([]int64, len(j.EventUnix))}
	var err error
	if t.Received, err = record.ParseMicros(string(j.ReceivedUnix)); err != nil {
		return nil, fmt.Errorf("received_unix: %w", err)
	}
	for i, n := range j.EventUnix {
		if t.Events[i], err = record.ParseMicros(string(n)); err != nil {
			return nil, fmt.Errorf("event_unix[%d]: %w", i, err)
		}
	}
	if j.StepUnix != nil {
		if len(j.StepUnix) != len(j.EventUnix) {
			return nil, fmt.Errorf("step_unix has %d entries for %d events", len(j.StepUnix), len(j.EventUnix))
		}
		t.Steps = make([]int64, len(j.StepUnix))
		for i, n := range j.StepUnix {
			if t.Steps[i], err = record.ParseMicros(string(n)); err != nil {
				return nil, fmt.Errorf("step_unix[%d]: %w", i, err)
			}
		}
	}
	if j.EventTokens != nil {
		if len(j.EventTokens) != len(j.EventUnix) {
			return nil, fmt.Errorf("event_tokens has %d entries for %d events", len(j.EventTokens), len(j.EventUnix))
		}
		for i, n := range j.EventTokens {
			if n < 1 {
				return nil, fmt.Errorf("event_tokens[%d]: %d is not a positive count", i, n)
			}
		}
		t.Tokens = j.EventTokens
	}
	return t, nil
}
