package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/sim"
)

// request is one generation request in flight.
type request struct {
	*genRequest
	id       string
	n        uint64
	base     uint64 // first word of the generated text
	received time.Time
	created  int64
	fault    FaultKind
	faultAt  int // token events written before a mid-stream fault strikes

	written  int // completion tokens written
	finish   string
	canceled bool // the client went away
	struck   bool // the fault was injected
	truth    *truthRecord
	model    []byte    // the model name as JSON (Responses objects)
	tool     *toolCall // the answer is this tool call; nil for text
	// cached is the prompt tokens the engine's prefix cache served (sim.Step.Cached), which
	// usage says as cached_tokens; -1 without a prefix cache: usage says nothing of it.
	cached int
}

// took notes what an engine step says of the request beyond its tokens.
func (rq *request) took(st sim.Step) {
	if rq.cached >= 0 {
		rq.cached = st.Cached
	}
}

// appendResponse appends a Responses API response object: completed, with usage, and
// with the output text when text is given (the non-streamed reply).
func (rq *request) appendResponse(b []byte, text string, completion int) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, rq.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = strconv.AppendInt(b, rq.created, 10)
	b = append(b, `,"status":"completed","model":`...)
	b = append(b, rq.model...)
	b = append(b, `,"output":[`...)
	if rq.tool != nil {
		b = rq.appendFunctionCall(b, "completed", completion)
	} else if text != "" {
		b = append(b, `{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","annotations":[],"text":"`...)
		b = append(b, text...) // appendWords writes JSON-safe words
		b = append(b, `"}]}`...)
	}
	b = append(b, `],"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(rq.promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(rq.promptTokens+completion), 10)
	if rq.cached >= 0 {
		b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(rq.cached), 10)
		b = append(b, '}')
	}
	return append(b, `}}`...)
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, chat, responses bool) {
	received := time.Now()
	s.inflight.Add(1)
	defer func() {
		// Flush the ground truth whenever the server goes idle, so the file is complete
		// for `llmbench fidelity` after a run even while serve keeps running (and a killed
		// serve loses at most what was in flight).
		if s.inflight.Add(-1) == 0 && s.truth != nil {
			_ = s.truth.flush() // an error is kept and reported by Close
		}
	}()
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	var g *genRequest
	if responses {
		g, aerr = decodeResponsesRequest(body, s.lim)
	} else {
		g, aerr = decodeRequest(body, chat, s.lim)
	}
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	n := s.seq.Add(1)
	rq := &request{genRequest: g, n: n, received: received, created: received.Unix(),
		base: splitmix64(uint64(s.opts.Seed) ^ n ^ 0x5bd1e995), cached: -1}
	rq.fault, rq.faultAt = s.opts.Faults.choose(s.opts.Seed, n, g.maxTokens)

	switch rq.fault {
	case FaultHTTP500:
		s.faults[FaultHTTP500].Add(1)
		writeAPIError(w, newAPIError(http.StatusInternalServerError, "server_error", "", "injected_fault",
			"injected fault: internal server error"))
		return
	case FaultHTTP429:
		s.faults[FaultHTTP429].Add(1)
		secs := int64((s.opts.Faults.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeAPIError(w, newAPIError(http.StatusTooManyRequests, "rate_limit_error", "", "rate_limit_exceeded",
			"injected fault: rate limit reached; retry after %d s", secs))
		return
	}

	if g.images > 0 && s.opts.ImageEncode > 0 {
		// The vision encoder runs before the prompt's prefill is queued.
		t := time.NewTimer(time.Duration(g.images) * s.opts.ImageEncode)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	rq.id = s.newID(chat, n)
	rq.tool = g.tools.call(s.opts.Tools, s.opts.Seed, n, rq.id[len("chatcmpl-"):])
	if responses {
		rq.id = "resp_" + rq.id[len("chatcmpl-"):]
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	seq := sim.SeqRequest{ID: rq.id, PromptTokens: g.promptTokens, MaxTokens: g.maxTokens, IgnoreEOS: g.ignoreEOS,
		Session: r.Header.Get(cmp.Or(s.opts.SessionHeader, route.SessionHeader))}
	if s.opts.BlockSize > 0 {
		seq.PrefixHashes = prefixHashes(g.promptParts, s.opts.BlockSize, g.promptTokens/s.opts.BlockSize)
		rq.cached = 0 // a prefix cache: usage says what it served, 0 included (as OpenAI's does)
	}
	steps, err := s.g.Submit(ctx, seq)
	if err != nil {
		if ctx.Err() != nil {
			return // the client is gone; nobody to answer
		}
		if errors.Is(err, sim.ErrStopped) {
			writeAPIError(w, newAPIError(http.StatusServiceUnavailable, "server_error", "", "engine_stopped",
				"the engine is shutting down"))
			return
		}
		// Otherwise the request can never run (e.g. it does not fit the KV cache).
		writeAPIError(w, badRequest("", "the engine refused the request: %v", err))
		return
	}
	if s.truth != nil {
		ev := min(g.maxTokens, 4096) // events expected, at most
		rq.truth = &truthRecord{received: received, events: make([]int64, 0, ev), steps: make([]int64, 0, ev),
			tokens: make([]int32, 0, ev)}
		// Deferred so a disconnect fault (a panic that aborts the connection) is recorded too.
		defer s.writeTruth(rq)
	}
	if g.stream {
		s.stream(ctx, w, rq, steps)
	} else {
		s.complete(ctx, w, rq, steps)
	}
}

func (s *Server) writeTruth(rq *request) {
	fault := FaultNone
	if rq.struck {
		fault = rq.fault
	}
	line := rq.truth.appendLine(make([]byte, 0, 250+len(rq.truth.events)*38), rq.id, rq.stream,
		promptSHA256(rq.promptParts), rq.promptTokens, rq.written, rq.finish, fault, rq.canceled)
	s.truth.write(line)
}

// chunkHead is `{"id":"…","object":"…","created":…,"model":"…","choices":[`, shared by
// every chunk of a response.
func (s *Server) chunkHead(rq *request, object string) []byte {
	b := make([]byte, 0, 96+len(rq.id)+len(s.modelJSON))
	b = append(b, `{"id":"`...)
	b = append(b, rq.id...)
	b = append(b, `","object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, rq.created, 10)
	b = append(b, `,"model":`...)
	b = append(b, s.modelJSON...)
	b = append(b, `,"choices":[`...)
	return b
}

// appendUsage appends usage, with prompt_tokens_details.cached_tokens when cached >= 0 (as
// vLLM's --enable-prompt-tokens-details puts it in a response's final usage).
func appendUsage(b []byte, prompt, completion, cached int) []byte {
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	if cached >= 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// streamWriter builds SSE events by hand into one reused buffer: no encoding/json per chunk.
type streamWriter struct {
	rq   *request
	head []byte
	buf  []byte
}

func (sw *streamWriter) begin() { sw.buf = sw.buf[:0] }

func (sw *streamWriter) open() {
	sw.buf = append(sw.buf, "data: "...)
	sw.buf = append(sw.buf, sw.head...)
}

func (sw *streamWriter) close(completion int) {
	if sw.rq.continuousUsage {
		sw.buf = appendUsage(sw.buf, sw.rq.promptTokens, completion, -1) // the details only in the final usage, as vLLM
	}
	sw.buf = append(sw.buf, "}\n\n"...)
}

func (sw *streamWriter) role() {
	if sw.rq.responses {
		sw.buf = append(sw.buf, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\""...)
		sw.buf = append(sw.buf, sw.rq.id...)
		sw.buf = append(sw.buf, "\",\"object\":\"response\",\"status\":\"in_progress\"}}\n\n"...)
		return
	}
	sw.open()
	sw.buf = append(sw.buf, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	sw.close(0)
}

// tokens appends the event of tokens [from, from+n): text, or the tool call's next
// piece (last: the call's arguments end with it).
func (sw *streamWriter) tokens(from, n int, last bool) {
	if sw.rq.tool != nil {
		sw.toolTokens(from, n, last)
		return
	}
	if sw.rq.responses {
		sw.buf = append(sw.buf, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\""...)
		sw.buf = appendWords(sw.buf, sw.rq.base, from, n)
		sw.buf = append(sw.buf, "\"}\n\n"...)
		return
	}
	sw.open()
	if sw.rq.chat {
		sw.buf = append(sw.buf, `{"index":0,"delta":{"content":"`...)
		sw.buf = appendWords(sw.buf, sw.rq.base, from, n)
		sw.buf = append(sw.buf, `"},"logprobs":null,"finish_reason":null}]`...)
	} else {
		sw.buf = append(sw.buf, `{"index":0,"text":"`...)
		sw.buf = appendWords(sw.buf, sw.rq.base, from, n)
		sw.buf = append(sw.buf, `","logprobs":null,"finish_reason":null}]`...)
	}
	sw.close(from + n)
}

// finish appends the finish_reason chunk, the usage chunk when asked for, and [DONE].
func (sw *streamWriter) finish(reason string, completion int) {
	if sw.rq.tool != nil {
		reason = "tool_calls" // as vLLM says of an answer its tool parser found a call in
		if sw.rq.responses {
			sw.functionCallDone(completion)
		}
	}
	if sw.rq.responses {
		sw.buf = append(sw.buf, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":"...)
		sw.buf = sw.rq.appendResponse(sw.buf, "", completion)
		sw.buf = append(sw.buf, "}\n\n"...)
		return
	}
	sw.open()
	if sw.rq.chat {
		sw.buf = append(sw.buf, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
	} else {
		sw.buf = append(sw.buf, `{"index":0,"text":"","logprobs":null,"finish_reason":"`...)
	}
	sw.buf = append(sw.buf, reason...)
	sw.buf = append(sw.buf, `"}]`...)
	sw.close(completion)
	if sw.rq.includeUsage {
		sw.open()
		sw.buf = append(sw.buf, ']')
		sw.buf = appendUsage(sw.buf, sw.rq.promptTokens, completion, sw.rq.cached)
		sw.buf = append(sw.buf, "}\n\n"...)
	}
	sw.buf = append(sw.buf, "data: [DONE]\n\n"...)
}

func (sw *streamWriter) errorEvent(e *apiError) {
	if sw.rq.responses {
		m, _ := json.Marshal(e.Message)
		sw.buf = append(sw.buf, "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":"...)
		sw.buf = append(sw.buf, m...)
		sw.buf = append(sw.buf, "}\n\n"...)
		return
	}
	sw.buf = append(sw.buf, "data: "...)
	sw.buf = append(sw.buf, e.body()...)
	sw.buf = append(sw.buf, "\n\ndata: [DONE]\n\n"...)
}

// malformed is a data line cut off in the middle of a JSON object.
func (sw *streamWriter) malformed() {
	sw.open()
	sw.buf = append(sw.buf, `{"index":0,"delta":{"cont`...)
	sw.buf = append(sw.buf, "\n\n"...)
}

// stream serves an SSE response: one Write and one Flush per engine step (a backlog of
// steps, when the client reads slower than the engine emits, is coalesced into one event
// carrying several tokens, as vLLM does), timestamps each token event for the ground truth
// right after its flush, and injects the request's mid-stream fault.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, rq *request, steps <-chan sim.Step) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	object := "text_completion"
	if rq.chat {
		object = "chat.completion.chunk"
	}
	sw := &streamWriter{rq: rq, head: s.chunkHead(rq, object), buf: make([]byte, 0, 1024)}
	if rq.chat {
		sw.role()
	}
	rq.model = s.modelJSON
	if !s.send(w, rc, sw.buf) {
		rq.canceled = true
		return
	}

	var (
		events  int
		pending int // tokens received but not yet written
		done    bool
		stall   *time.Timer
		stallC  <-chan time.Time
		lastAt  time.Time
		stepAt  time.Time // the newest step's end: when the pending tokens were ready
	)
	mid := rq.fault >= FaultDisconnect
	for {
		select {
		case st, ok := <-steps:
			if !ok {
				steps = nil
				if !done {
					s.aborted(ctx, w, rc, sw, rq)
					return
				}
				continue
			}
			pending += st.Tokens
			stepAt = st.At
			rq.took(st)
			if st.Done {
				done, rq.finish = true, st.FinishReason
			}
			// Coalesce steps already queued behind this one: the client is behind.
			for !done && len(steps) > 0 {
				st = <-steps
				pending += st.Tokens
				stepAt = st.At
				rq.took(st)
				if st.Done {
					done, rq.finish = true, st.FinishReason
				}
			}
		case <-stallC:
			stallC = nil
		case <-ctx.Done():
			rq.canceled = true
			return
		}
		if stallC != nil {
			continue // stalled: keep draining the engine, send nothing
		}
		if mid && !rq.struck && (events >= rq.faultAt || done) {
			rq.struck = true
			s.faults[rq.fault].Add(1)
			switch rq.fault {
			case FaultDisconnect:
				// Abort the connection with nothing more sent: the client sees a
				// truncated stream (HTTP/1) or a reset stream (HTTP/2).
				panic(http.ErrAbortHandler)
			case FaultStall:
				stall = time.NewTimer(s.opts.Faults.StallFor)
				defer stall.Stop()
				stallC = stall.C
				continue
			case FaultMalformed:
				sw.begin()
				sw.malformed()
				if !s.send(w, rc, sw.buf) {
					rq.canceled = true
					return
				}
			case FaultErrorEvent:
				sw.begin()
				sw.errorEvent(newAPIError(http.StatusInternalServerError, "server_error", "", "injected_fault",
					"injected fault: the engine failed mid-stream"))
				s.send(w, rc, sw.buf)
				return
			}
		}
		if pending == 0 && !done {
			continue
		}
		sw.begin()
		if pending > 0 || done && rq.tool != nil && rq.written > 0 {
			sw.tokens(rq.written, pending, done) // a call's last event closes its arguments
		}
		if done {
			sw.finish(rq.finish, rq.written+pending)
		}
		if !s.send(w, rc, sw.buf) {
			rq.canceled = true
			return
		}
		if pending > 0 {
			now := time.Now()
			if rq.truth != nil {
				rq.truth.add(now, stepAt, pending)
			}
			s.observeEvent(rq, events, pending, now, lastAt)
			lastAt = now
			events++
			rq.written += pending
			pending = 0
		}
		if done {
			s.observeDone(rq, lastAt)
			return
		}
	}
}

// send writes one buffer and flushes it to the wire; false when the client is gone.
func (s *Server) send(w http.ResponseWriter, rc *http.ResponseController, b []byte) bool {
	if _, err := w.Write(b); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// aborted handles a sequence the generator ended without a Done step: the client's
// cancellation, or an engine failure reported to the client as an error event.
func (s *Server) aborted(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, sw *streamWriter, rq *request) {
	if ctx.Err() != nil {
		rq.canceled = true
		return
	}
	sw.begin()
	sw.errorEvent(newAPIError(http.StatusInternalServerError, "server_error", "", "generation_aborted",
		"the engine ended the sequence after %d tokens without finishing it", rq.written))
	s.send(w, rc, sw.buf)
}

func (s *Server) observeEvent(rq *request, events, n int, now, last time.Time) {
	if events == 0 {
		s.metrics.ttft.Observe(now.Sub(rq.received).Seconds())
		return
	}
	// Per-token ITL: an event carrying n tokens after gap g counts n gaps of g/n.
	gap := now.Sub(last).Seconds() / float64(n)
	for range n {
		s.metrics.itl.Observe(gap)
	}
}

func (s *Server) observeDone(rq *request, last time.Time) {
	if last.IsZero() {
		last = time.Now()
	}
	s.metrics.e2e.Observe(last.Sub(rq.received).Seconds())
	s.metrics.success.WithLabelValues(rq.finish).Inc()
}

// complete serves a non-streaming response once the sequence is done. Its one "event" for
// the ground truth is the body's write. Faults apply at completion: disconnect sends
// nothing, stall delays the body, malformed sends a truncated body, error_event a 200 whose
// body is an error object.
func (s *Server) complete(ctx context.Context, w http.ResponseWriter, rq *request, steps <-chan sim.Step) {
	total := 0
	var stepAt time.Time // the Done step's end
	for done := false; !done; {
		select {
		case st, ok := <-steps:
			if !ok {
				if ctx.Err() != nil {
					rq.canceled = true
					return
				}
				writeAPIError(w, newAPIError(http.StatusInternalServerError, "server_error", "", "generation_aborted",
					"the engine ended the sequence after %d tokens without finishing it", total))
				return
			}
			total += st.Tokens
			stepAt = st.At
			rq.took(st)
			if st.Done {
				done, rq.finish = true, st.FinishReason
			}
		case <-ctx.Done():
			rq.canceled = true
			return
		}
	}
	object := "text_completion"
	if rq.chat {
		object = "chat.completion"
	}
	if rq.fault >= FaultDisconnect {
		rq.struck = true
		s.faults[rq.fault].Add(1)
		switch rq.fault {
		case FaultDisconnect:
			panic(http.ErrAbortHandler)
		case FaultStall:
			t := time.NewTimer(s.opts.Faults.StallFor)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				rq.canceled = true
				return
			}
		case FaultMalformed:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(s.chunkHead(rq, object)) // an object cut off mid-way
			return
		case FaultErrorEvent:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(newAPIError(http.StatusInternalServerError, "server_error", "", "injected_fault",
				"injected fault: the engine failed").body())
			return
		}
	}
	rq.model = s.modelJSON
	var b []byte
	if rq.responses {
		b = rq.appendResponse(make([]byte, 0, 300+total*8), string(appendWords(nil, rq.base, 0, total)), total)
	} else {
		b = s.chunkHead(rq, object)
		b = append(make([]byte, 0, len(b)+200+total*8), b...)
	}
	switch {
	case rq.responses:
	case rq.chat && rq.tool != nil:
		b = append(b, `{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`...)
		b = rq.appendChatCall(b, total)
		b = append(b, `]},"logprobs":null,"finish_reason":"`...)
	case rq.chat:
		b = append(b, `{"index":0,"message":{"role":"assistant","content":"`...)
		b = appendWords(b, rq.base, 0, total)
		b = append(b, `"},"logprobs":null,"finish_reason":"`...)
	default:
		b = append(b, `{"index":0,"text":"`...)
		b = appendWords(b, rq.base, 0, total)
		b = append(b, `","logprobs":null,"finish_reason":"`...)
	}
	if !rq.responses {
		if rq.chat && rq.tool != nil {
			b = append(b, "tool_calls"...)
		} else {
			b = append(b, rq.finish...)
		}
		b = append(b, `"}]`...)
		b = appendUsage(b, rq.promptTokens, total, rq.cached)
		b = append(b, "}"...)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if _, err := w.Write(b); err != nil {
		rq.canceled = true
		return
	}
	_ = http.NewResponseController(w).Flush()
	now := time.Now()
	rq.written = total
	if rq.truth != nil && total > 0 {
		rq.truth.add(now, stepAt, total)
	}
	if total > 0 {
		s.metrics.ttft.Observe(now.Sub(rq.received).Seconds())
	}
	s.observeDone(rq, now)
}
