package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/cputime"
	"github.com/llmbench/llmbench/internal/record"
)

// vLLM-shaped chat chunk (as model_dump_json(exclude_unset=True) writes it).
func benchChunk(i int) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-8f1c2a7e4b3d4f0e9a6b5c4d3e2f1a0b","object":"chat.completion.chunk","created":1727346180,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" tok%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", i)
}

func benchStream(n int) [][]byte {
	events := [][]byte{[]byte(`data: {"id":"chatcmpl-8f1c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")}
	for i := range n {
		events = append(events, []byte(benchChunk(i)))
	}
	events = append(events, []byte(`data: {"id":"chatcmpl-8f1c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n"+
		fmt.Sprintf(`data: {"id":"chatcmpl-8f1c","choices":[],"usage":{"prompt_tokens":512,"completion_tokens":%d,"total_tokens":%d}}`, n, n+512)+"\n\ndata: [DONE]\n\n"))
	return events
}

// replayReader hands out the same pieces again after rewind, without allocating.
type replayReader struct {
	pieces [][]byte
	i, off int
}

func (r *replayReader) rewind() { r.i, r.off = 0, 0 }

func (r *replayReader) Read(p []byte) (int, error) {
	if r.i >= len(r.pieces) {
		return 0, io.EOF
	}
	n := copy(p, r.pieces[r.i][r.off:])
	r.off += n
	if r.off == len(r.pieces[r.i]) {
		r.i, r.off = r.i+1, 0
	}
	return n, nil
}

// BenchmarkReadStream measures the client's whole read path after the response headers
// (SSE framing, read-time stamps, chunk decoding, token accounting, the record's events)
// per token event, with one event per Read (a paced server) and with 64 KiB reads (a
// backlog).
func BenchmarkReadStream(b *testing.B) {
	const n = 1000
	events := benchStream(n)
	var whole []byte
	for _, e := range events {
		whole = append(whole, e...)
	}
	for _, tc := range []struct {
		name   string
		pieces [][]byte
	}{{"event-per-read", events}, {"64KiB-reads", chunks(string(whole), 64<<10)}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: APIOpenAIChat})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			rd := &replayReader{pieces: tc.pieces}
			st := new(streamState)
			start := time.Now()
			var rec record.Record
			one := func() {
				rd.rewind()
				st.reset()
				rec = record.Record{}
				c.readStream(ctx, ctx, cancel, start, rd, time.Now, nil, st, &rec)
				finish(st, c.tok, &rec)
			}
			one()
			if rec.Error != nil || rec.Events.Len() != n {
				b.Fatalf("error %v, %d events", rec.Error, rec.Events.Len())
			}
			allocs := testing.AllocsPerRun(20, one)
			b.SetBytes(int64(len(whole)))
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				one()
			}
			// CPU time as well as wall time: on a shared machine the wall figure includes
			// time the process spent waiting for a core.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(allocs/n, "allocs/event")
		})
	}
}

// BenchmarkDecodeChunk compares the hand-written scanner with encoding/json decoding the
// same chunk into the smallest struct that holds what we need.
func BenchmarkDecodeChunk(b *testing.B) {
	chunk := []byte(benchChunk(7)[len("data: ") : len(benchChunk(7))-2])
	b.Run("scanner", func(b *testing.B) {
		var d decoder
		b.ReportAllocs()
		for b.Loop() {
			if err := d.decodeOpenAI(chunk, nil); err != nil || !d.ci.tokens {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		type chunkJSON struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
				} `json:"delta"`
				Text         *string `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
				PromptTokens     int `json:"prompt_tokens"`
			} `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		b.ReportAllocs()
		for b.Loop() {
			var c chunkJSON
			if err := json.Unmarshal(chunk, &c); err != nil || c.Choices[0].Delta.Content == nil {
				b.Fatal(err)
			}
		}
	})
}

// processCPU is the CPU time the process has used (0 where the system does not say).
func processCPU() time.Duration {
	d, _ := cputime.Process()
	return d
}
