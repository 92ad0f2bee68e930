package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
)

// jsonlOut is one line of `llmbench dataset` output; loadJSONL reads it back.
type jsonlOut struct {
	Prompt       *string   `json:"prompt,omitempty"`
	Messages     []Message `json:"messages,omitempty"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	ArrivalS     *float64  `json:"arrival_s,omitempty"`
	PrefixTokens int       `json:"prefix_tokens,omitempty"`
	PrefixGroup  *int      `json:"prefix_group,omitempty"`
}

// WriteJSONL writes requests as they would be sent, one JSON object per line: "prompt"
// and/or "messages", "input_tokens", "output_tokens", "arrival_s" for traces (seconds from the
// level start) and the shared prefix when there is one. The dataset jsonl:FILE reads the
// file back into the same requests.
func WriteJSONL(w io.Writer, reqs ...Request) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range reqs {
		o := jsonlOut{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
		if r.Messages == nil && r.Prompt == "" {
			return errors.New("workload: request has no prompt (lengths-only sources cannot be written as a dataset)")
		}
		// Both forms when both exist: messages for the chat API, prompt for completions.
		o.Messages = r.Messages
		if r.Prompt != "" {
			p := r.Prompt
			o.Prompt = &p
		}
		if r.HasArrival {
			a := r.Arrival.Seconds()
			o.ArrivalS = &a
		}
		if r.PrefixTokens > 0 {
			g := r.PrefixGroup
			o.PrefixTokens, o.PrefixGroup = r.PrefixTokens, &g
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	return nil
}

// unboundedCount is how many requests WriteRequests writes of a source with no rows of its
// own (lengths drawn from distributions) when not told.
const unboundedCount = 100

// RequestCount is n unless it is 0, then every row of src, else unboundedCount.
func RequestCount(src Source, n int) int {
	if n == 0 {
		n = src.Len()
	}
	if n == 0 {
		n = unboundedCount
	}
	return n
}

// WriteRequests writes src's first n requests (of its first level) as WriteJSONL does,
// stopping with ctx's error when it ends.
func WriteRequests(ctx context.Context, w io.Writer, src Source, n int) error {
	bw := bufio.NewWriter(w)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := WriteJSONL(bw, src.Request(0, i)); err != nil {
			return err
		}
	}
	return bw.Flush()
}
