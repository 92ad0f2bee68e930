package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

var (
	errTimeout     = errors.New("request timeout")
	errIdleTimeout = errors.New("stream idle timeout")
	errDrain       = errors.New("drain timeout")
)

// drainTimeout bounds the wait for the end of a body after the stream's end marker:
// reading to EOF keeps the connection alive for the next request.
const drainTimeout = time.Second

// tokEvent is one token-carrying event, kept until the stream ends because its token
// count may depend on what comes later (usage, tokenizer).
type tokEvent struct {
	at      time.Duration // offset from the run start
	cum     int32         // the chunk's cumulative completion_tokens, 0 when absent
	textEnd int32         // end of its text in decoder.text (when the text is kept)
	tool    bool          // it carried tool-call text
	other   bool          // it carried text that is not a tool call's
}

// streamState is the per-request working memory, pooled so that steady-state requests
// allocate almost nothing.
type streamState struct {
	sse    sseReader
	lines  lineReader
	dec    decoder
	events []tokEvent

	// What the stream said.
	sawDone, sawFinish bool
	usageN, promptN    int
	cached             int // prompt tokens served from the prompt cache, per usage, when hasCached
	hasCached          bool
	timings            serverTimings
	firstContent       time.Duration
	hasContent         bool
	firstTool          time.Duration // the first event with tool-call text
	hasTool            bool
	firstAt            time.Time // when the first token event's bytes arrived
}

var statePool = sync.Pool{New: func() any { return new(streamState) }}

func (st *streamState) reset() {
	st.events = st.events[:0]
	st.sawDone, st.sawFinish = false, false
	st.usageN, st.promptN = 0, 0
	st.cached, st.hasCached = 0, false
	st.timings = serverTimings{}
	st.firstContent, st.hasContent = 0, false
	st.firstTool, st.hasTool = 0, false
	st.firstAt = time.Time{}
	st.dec.text, st.dec.tool = st.dec.text[:0], st.dec.tool[:0]
	if cap(st.dec.text) > 1<<20 {
		st.dec.text = nil
	}
	if cap(st.dec.tool) > 1<<20 {
		st.dec.tool = nil
	}
	if cap(st.events) > 1<<16 {
		st.events = nil
	}
}

// idleWatch fails a stream that receives no bytes for d, without touching a timer per
// event: reads only store their time, and the timer, when it fires, re-arms itself for
// the remaining time or cancels the request. One per request (a late fire must never
// reach a later request), guarded by mu except for the hot last-read stamp.
type idleWatch struct {
	d      time.Duration
	base   time.Time
	last   atomic.Int64 // ns since base of the latest read
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func startIdleWatch(d time.Duration, base time.Time, cancel context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{d: d, base: base, cancel: cancel}
	w.last.Store(int64(time.Since(base)))
	w.mu.Lock()
	w.timer = time.AfterFunc(d, w.fire)
	w.mu.Unlock()
	return w
}

func (w *idleWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	quiet := time.Since(w.base) - time.Duration(w.last.Load())
	if quiet >= w.d {
		w.cancel(errIdleTimeout)
		return
	}
	w.timer.Reset(w.d - quiet)
}

func (w *idleWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
}

// Do sends one request and fills rec: Sent, Done, Events, ResponseID, OutputTokens,
// OutputTokensSource, ServerPromptTokens and, when it failed, Error. A failed request
// keeps the timings it got. start is the run's t = 0.
func (c *Client) Do(ctx context.Context, start time.Time, req workload.Request, rec *record.Record) {
	if rec.InputTokens == 0 {
		rec.InputTokens = req.InputTokens
	}
	rec.Unstreamed = c.unstreamed
	rec.Images, rec.ImageBytes = int32(len(req.Images)), 0
	for _, im := range req.Images {
		rec.ImageBytes += int32(im.Bytes)
	}
	switch {
	case Embeddings(c.cfg.API):
		rec.Inputs = int32(len(batchOf(req)))
	case c.cfg.API == APIRerank:
		rec.Documents = int32(len(req.Documents))
	}
	body, err := c.body.build(req)
	if err != nil {
		now := record.Since(start, time.Now())
		rec.Sent, rec.Done = now, now
		rec.Error = &record.Error{Kind: record.KindConnect, Message: c.message("building the request body: " + err.Error())}
		return
	}

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.cfg.Timeout > 0 {
		var cancelT context.CancelFunc
		rctx, cancelT = context.WithTimeoutCause(rctx, c.cfg.Timeout, errTimeout)
		defer cancelT()
	}

	resp, at := c.send(ctx, rctx, start, body, req.Session(), c.reuse())
	if at.err != nil && at.reused && at.firstByte == 0 && closedConnErr(at.err) && rctx.Err() == nil {
		// The server had closed the kept-alive connection: the re-send rule (conn.go).
		c.conns.retried.Add(1)
		rec.Retried = true
		resp, at = c.send(ctx, rctx, start, body, req.Session(), false)
	}
	rec.Sent = at.sent
	rec.Events.Base = rec.Sent
	rec.Phases = at.phases()
	if at.err != nil {
		rec.Done = record.Since(start, time.Now())
		kind := record.KindConnect
		if at.gotConn > 0 {
			kind = record.KindDisconnect // connected, then lost before a response
		}
		rec.Error = c.failure(ctx, rctx, kind, unwrapURLError(at.err))
		if kind == record.KindConnect && portsExhausted(at.err) {
			rec.Error.Message = c.message(portsMessage(unwrapURLError(at.err)))
		}
		return
	}
	defer resp.Body.Close()
	complete := false
	if at.conn != nil {
		defer func() { at.conn.responseDone(complete) }() // before the body's Close (LIFO)
	}

	if resp.StatusCode/100 != 2 {
		// The error body is read whole (bounded in size and time): it is the message.
		t := time.AfterFunc(2*time.Second, func() { cancel(errDrain) })
		msg, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		t.Stop()
		rec.Done = record.Since(start, time.Now())
		m := ErrorMessage(msg)
		if m == "" && rerr != nil {
			m = rerr.Error()
		}
		if m == "" {
			m = http.StatusText(resp.StatusCode)
		}
		rec.Error = &record.Error{Kind: record.KindHTTPStatus, Status: resp.StatusCode, Message: c.message(m),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
		complete = rerr == nil
		return
	}

	if c.unstreamed {
		c.readWholeResponse(ctx, rctx, start, resp, at, req, rec)
		complete = rec.Error == nil || rec.Error.Kind == record.KindMismatch || rec.Error.Kind == record.KindEmpty
		return
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" && !c.spec.ndjson {
		// A JSON document instead of a stream: the server ignored "stream": true.
		t := time.AfterFunc(2*time.Second, func() { cancel(errDrain) })
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		t.Stop()
		rec.Done = record.Since(start, time.Now())
		rec.Error = &record.Error{Kind: record.KindMalformedEvent,
			Message: c.message("the server answered with a JSON document, not an event stream: " + excerpt(bytes.TrimSpace(b)))}
		return
	}

	st := statePool.Get().(*streamState)
	st.reset()
	defer statePool.Put(st)
	var idle *idleWatch
	if c.cfg.IdleTimeout > 0 {
		idle = startIdleWatch(c.cfg.IdleTimeout, c.base, cancel)
		defer idle.stop()
	}
	now := time.Now
	var lag time.Duration
	if stamps := at.rx; stamps != nil && resp.ProtoMajor == 1 {
		// HTTP/1.1: the connection carries this stream alone, so its stamps are the stream's.
		var lastK int64
		var lastT time.Time
		now = func() time.Time {
			t, k, age, ok := stamps.stamp()
			if !ok {
				return t
			}
			rec.KernelStamps = true
			lag = max(lag, age)
			// Bytes of one stamp are one arrival: give them one time, so that events that
			// shared a read and a stamp are seen to (TTFTUpperBound).
			if k == lastK {
				return lastT
			}
			lastK, lastT = k, t
			return t
		}
	}
	c.readStream(ctx, rctx, cancel, start, resp.Body, now, idle, st, rec)
	rec.ReadLag = lag.Truncate(time.Microsecond)
	complete = rec.Error == nil && st.sawDone
	finish(st, c.tok, rec)
	if c.cfg.SaveText {
		t := string(st.dec.text)
		rec.Text = &t
	}
}

// readWholeResponse reads a response that is one JSON document and fills rec from it, its
// arrival stamped like a stream event's (the kernel's receive time where there is one).
func (c *Client) readWholeResponse(parent, rctx context.Context, start time.Time, resp *http.Response, at *attempt,
	req workload.Request, rec *record.Record) {
	now := time.Now
	if stamps := at.rx; stamps != nil && resp.ProtoMajor == 1 {
		now = func() time.Time {
			t, _, age, ok := stamps.stamp()
			if ok {
				rec.KernelStamps = true
				rec.ReadLag = max(rec.ReadLag, age.Truncate(time.Microsecond))
			}
			return t
		}
	}
	body, t, err := readWhole(resp.Body, now)
	if err != nil {
		rec.Done = record.Since(start, time.Now())
		rec.Error = c.failure(parent, rctx, record.KindDisconnect, err)
		return
	}
	c.whole(body, record.Since(start, t), req, rec)
}

// attempt is what one send of a request saw (httptrace), as ns since the run start + 1
// (0: it did not happen).
type attempt struct {
	err                       error
	reused                    bool
	conn                      *trackedConn // the kept-alive connection it went on; nil on a new-per-request one
	rx                        *rxStamps
	sent                      time.Duration
	gotConn, wrote, wroteAll  int64
	firstByte                 int64
	dnsStart, dnsDone         int64
	connectStart, connectDone int64
	tlsStart, tlsDone         int64
	firstByteStamp            time.Duration // the kernel's receive time of the first response byte
	firstByteStamped          bool
}

// send sends the request once, on a kept-alive connection when reuse is true and on a new
// one that is closed after the response otherwise.
func (c *Client) send(ctx, rctx context.Context, start time.Time, body []byte, session string, reuse bool) (*http.Response, *attempt) {
	at := &attempt{}
	since := func() int64 { return int64(time.Since(start)) + 1 }
	// Sent is when net/http's write loop began writing the request (its first header
	// field), which under thousands of starts can be milliseconds after the connection was
	// in hand: that wait, like the wait for a connection, is the client's (schedule lag),
	// not the server's (TTFT). Without that trace, it is when the connection was in hand.
	// The trace's hooks run on net/http's goroutines, hence the atomics.
	var gotConn, wrote, wroteAll, firstByte atomic.Int64
	var dnsStart, dnsDone, connectStart, connectDone, tlsStart, tlsDone atomic.Int64
	var reused atomic.Bool
	var conn atomic.Pointer[trackedConn]
	var rx atomic.Pointer[rxStamps]
	var fbStamp atomic.Int64 // kernel time of the first response byte, ns since start + 1
	trace := &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { dnsStart.CompareAndSwap(0, since()) },
		DNSDone:           func(httptrace.DNSDoneInfo) { dnsDone.Store(since()) },
		ConnectStart:      func(string, string) { connectStart.CompareAndSwap(0, since()) },
		ConnectDone:       func(_, _ string, err error) { connectDoneOK(&connectDone, err, since) },
		TLSHandshakeStart: func() { tlsStart.CompareAndSwap(0, since()) },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { tlsDone.Store(since()) },
		GotConn: func(info httptrace.GotConnInfo) {
			if !gotConn.CompareAndSwap(0, since()) {
				return
			}
			reused.Store(info.Reused)
			if tc := trackedOf(info.Conn); tc != nil {
				conn.Store(tc)
			}
			if c := rxConnOf(info.Conn); c != nil {
				rx.Store(c.claim())
			}
		},
		WroteHeaderField: func(string, []string) {
			if wrote.Load() == 0 {
				wrote.CompareAndSwap(0, since())
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) { wroteAll.CompareAndSwap(0, since()) },
		GotFirstResponseByte: func() {
			firstByte.CompareAndSwap(0, since())
			if tc := conn.Load(); tc != nil {
				tc.responseStarted()
			}
			if s := rx.Load(); s != nil {
				if t, _, _, ok := s.stamp(); ok {
					fbStamp.Store(int64(t.Sub(start)) + 1)
				}
			}
		},
	}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace), http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		at.sent = record.Since(start, time.Now())
		at.err = err
		return nil, at
	}
	hreq.Header = c.header.Clone()
	if session != "" && c.cfg.SessionHeader != "" {
		hreq.Header.Set(c.cfg.SessionHeader, session)
	}
	hc := c.http
	if !reuse {
		hc = c.httpFresh
	}
	t0 := time.Now()
	resp, err := hc.Do(hreq)
	at.err = err
	at.sent = record.Since(start, t0)
	at.gotConn, at.wrote, at.wroteAll, at.firstByte = gotConn.Load(), wrote.Load(), wroteAll.Load(), firstByte.Load()
	at.dnsStart, at.dnsDone = dnsStart.Load(), dnsDone.Load()
	at.connectStart, at.connectDone = connectStart.Load(), connectDone.Load()
	at.tlsStart, at.tlsDone = tlsStart.Load(), tlsDone.Load()
	at.reused, at.conn, at.rx = reused.Load(), conn.Load(), rx.Load()
	if fb := fbStamp.Load(); fb > 0 {
		at.firstByteStamp, at.firstByteStamped = time.Duration(fb-1), true
	}
	if at.wrote > 0 {
		at.sent = time.Duration(at.wrote - 1).Truncate(time.Microsecond)
	} else if at.gotConn > 0 {
		at.sent = time.Duration(at.gotConn - 1).Truncate(time.Microsecond)
	}
	if err != nil && at.conn != nil {
		at.conn.responseDone(false)
	}
	return resp, at
}

func connectDoneOK(done *atomic.Int64, err error, since func() int64) {
	if err == nil {
		done.Store(since())
	}
}

// phases turns the attempt's trace into the record's phases; nil when none happened.
func (at *attempt) phases() *record.Phases {
	p := &record.Phases{}
	span := func(from, to int64) time.Duration {
		return (time.Duration(to-1).Truncate(time.Microsecond) - time.Duration(from-1).Truncate(time.Microsecond))
	}
	if at.dnsStart > 0 && at.dnsDone >= at.dnsStart {
		p.DNS, p.Has = span(at.dnsStart, at.dnsDone), p.Has|record.PhaseDNS
	}
	if at.connectStart > 0 && at.connectDone >= at.connectStart {
		p.Connect, p.Has = span(at.connectStart, at.connectDone), p.Has|record.PhaseConnect
	}
	if at.tlsStart > 0 && at.tlsDone >= at.tlsStart {
		p.TLS, p.Has = span(at.tlsStart, at.tlsDone), p.Has|record.PhaseTLS
	}
	written := time.Duration(0)
	if at.wroteAll > 0 {
		written = time.Duration(at.wroteAll - 1).Truncate(time.Microsecond)
		p.Write, p.Has = max(written-at.sent, 0), p.Has|record.PhaseWrite
	}
	if at.firstByte > 0 && at.wroteAll > 0 {
		fb := time.Duration(at.firstByte - 1).Truncate(time.Microsecond)
		if at.firstByteStamped {
			fb = at.firstByteStamp.Truncate(time.Microsecond)
		}
		p.Headers, p.Has = max(fb-written, 0), p.Has|record.PhaseHeaders
	}
	if p.Has == 0 {
		return nil
	}
	return p
}

// retryAfter reads a Retry-After header (delay seconds or an HTTP date) as a delay; 0 when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > 1<<31 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Truncate(time.Second)
	}
	return 0
}

// failure classifies an error that ended a request. The run's own cancellation wins over
// everything, then our timeouts; otherwise the caller's kind stands.
func (c *Client) failure(parent, rctx context.Context, kind string, err error) *record.Error {
	cause := context.Cause(rctx)
	switch {
	case parent.Err() != nil:
		return &record.Error{Kind: record.KindCanceled, Message: c.message("canceled: " + context.Cause(parent).Error())}
	case errors.Is(cause, errTimeout):
		return &record.Error{Kind: record.KindTimeout, Message: fmt.Sprintf("no complete response within %v", c.cfg.Timeout)}
	case errors.Is(cause, errIdleTimeout):
		return &record.Error{Kind: record.KindIdleTimeout, Message: fmt.Sprintf("no bytes for %v; connection closed", c.cfg.IdleTimeout)}
	}
	return &record.Error{Kind: kind, Message: c.message(err.Error())}
}

// readStream reads events until the stream's end, an error event, or a failure, noting
// every token-carrying event with the time its bytes were read.
func (c *Client) readStream(parent, rctx context.Context, cancel context.CancelCauseFunc, start time.Time,
	body io.Reader, now func() time.Time, idle *idleWatch, st *streamState, rec *record.Record) {
	d := &st.dec
	d.keep = c.tok != nil || c.cfg.SaveText
	var sr *sseReader
	var lr *lineReader
	if c.spec.ndjson {
		lr = &st.lines
		lr.reset(body, now)
		lr.idle = idle
		sr = &lr.sseReader
	} else {
		sr = &st.sse
		sr.reset(body, now)
		sr.idle = idle
	}
	for {
		var data, event []byte
		var t time.Time
		var err error
		if lr != nil {
			data, t, err = lr.Next()
		} else {
			data, event, t, err = sr.Next()
		}
		if err != nil {
			if err == io.EOF {
				rec.Done = record.Since(start, t)
				if !st.sawDone && !st.sawFinish {
					end := c.spec.end
					if end == "" {
						end = "an end marker or a finish reason"
					}
					rec.Error = &record.Error{Kind: record.KindIncomplete, Message: "stream ended without " + end}
				}
				return
			}
			rec.Done = record.Since(start, time.Now())
			rec.Error = c.failure(parent, rctx, record.KindDisconnect, err)
			return
		}
		if derr := c.spec.decode(d, data, event); derr != nil {
			rec.Done = record.Since(start, t)
			if sr.cut {
				// A line cut by the end of the body is a truncated stream, not a server
				// that sends garbage.
				rec.Error = &record.Error{Kind: record.KindIncomplete, Message: "stream ended in the middle of an event"}
				return
			}
			rec.Error = &record.Error{Kind: record.KindMalformedEvent,
				Message: c.message(fmt.Sprintf("%v in event %q", derr, excerpt(data)))}
			return
		}
		ci := &d.ci
		if ci.id != nil && rec.ResponseID == "" {
			rec.ResponseID = string(appendUnescaped(nil, ci.id))
		}
		if ci.prompt > 0 {
			st.promptN = ci.prompt
		}
		if ci.hasUsage {
			st.usageN = ci.completion
		}
		if ci.hasCached {
			st.cached, st.hasCached = ci.cached, true
		}
		if ci.timings.set {
			st.timings = ci.timings
		}
		if ci.tokens {
			off := record.Since(start, t)
			ev := tokEvent{at: off, textEnd: int32(len(d.text)), tool: ci.tool, other: ci.other}
			if ci.hasUsage {
				ev.cum = int32(ci.completion)
			}
			st.events = append(st.events, ev)
			switch len(st.events) {
			case 1:
				st.firstAt = t
			case 2:
				// One read, one stamp for the first two: the first's own arrival is unknown.
				rec.TTFTUpperBound = t.Equal(st.firstAt)
			}
			if ci.content && !st.hasContent {
				st.hasContent, st.firstContent = true, off
			}
			if ci.tool && !st.hasTool {
				st.hasTool, st.firstTool = true, off
			}
		}
		if ci.streamErr {
			rec.Done = record.Since(start, t)
			msg := string(ci.errMsg)
			if msg == "" {
				msg = "error event without a message"
			}
			rec.Error = &record.Error{Kind: record.KindStreamError, Message: c.message(msg)}
			return
		}
		if ci.finish {
			st.sawFinish = true
		}
		if ci.done {
			st.sawDone = true
			rec.Done = record.Since(start, t)
			drain(sr, cancel)
			return
		}
	}
}

// drain reads the rest of the body (normally just the chunked-encoding terminator) so
// the connection can be reused, giving up after drainTimeout or 64 KiB.
func drain(sr *sseReader, cancel context.CancelCauseFunc) {
	if sr.err != nil {
		return
	}
	t := time.AfterFunc(drainTimeout, func() { cancel(errDrain) })
	defer t.Stop()
	for n := 0; sr.err == nil && n < 16; n++ {
		sr.pos, sr.end, sr.scan = 0, 0, 0
		sr.fill()
	}
}

// excerpt bounds the event text quoted in an error message.
func excerpt(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// finish turns the stream's events into the record's token events and output count
// (docs/design.md §1): N from usage, else the tokenizer, else the number of events; n_k from
// the server's per-chunk cumulative usage, else the tokenizer's count of the delta, else 1.
func finish(st *streamState, tok tokenizer.Tokenizer, rec *record.Record) {
	evs := st.events
	if st.promptN > 0 {
		rec.ServerPromptTokens = st.promptN
	}
	text := st.dec.text
	switch {
	case st.usageN > 0:
		rec.OutputTokens, rec.OutputTokensSource = st.usageN, record.SourceUsage
	case tok != nil && len(text) > 0:
		rec.OutputTokens, rec.OutputTokensSource = len(tok.Encode(string(text))), record.SourceTokenizer
	default:
		rec.OutputTokens, rec.OutputTokensSource = len(evs), record.SourceEvents
	}

	continuous := len(evs) > 0
	for _, e := range evs {
		if e.cum <= 0 {
			continuous = false
			break
		}
	}
	// When the server's own total equals the number of events, each event was one token
	// by the server's count; a client-side tokenizer (maybe not the model's) can only
	// make that worse.
	oneEach := rec.OutputTokensSource == record.SourceUsage && rec.OutputTokens == len(evs)
	prevCum, prevEnd := int32(0), int32(0)
	rec.Events.Grow(len(evs))
	toolN, allTool := 0, true
	for _, e := range evs {
		n := 1
		switch {
		case continuous:
			n = int(e.cum - prevCum)
			prevCum = e.cum
		case oneEach:
		case tok != nil && len(text) > 0:
			n = len(tok.Encode(string(text[prevEnd:e.textEnd])))
		}
		prevEnd = e.textEnd
		rec.Events.Append(e.at, max(n, 1))
		if e.tool {
			toolN += max(n, 1)
		}
		allTool = allTool && e.tool && !e.other
	}
	if st.hasTool {
		rec.FirstToolCall = st.firstTool
		rec.ToolCallTokens = int32(toolCallTokens(rec.OutputTokens, allTool, tok, st.dec.tool, toolN))
	}
	if st.hasContent && len(evs) > 0 && st.firstContent != evs[0].at {
		rec.FirstContent = st.firstContent
	}
	if t := st.timings; t.set {
		rec.Server = &record.ServerTimings{PromptTokens: t.promptN, Prefill: msDuration(t.promptMS),
			OutputTokens: t.predictedN, Decode: msDuration(t.predictedMS), Queue: msDuration(t.queueMS),
			Total: msDuration(t.totalMS)}
		setCached(rec, t.cacheN, t.hasCache)
	}
	setCached(rec, st.cached, st.hasCached) // usage's count, where the server gave both
	if rec.Error == nil && len(evs) == 0 {
		rec.Error = &record.Error{Kind: record.KindEmpty, Message: "the stream carried no generated tokens"}
	}
}

// setCached records what the server said it served of the prompt from its cache.
func setCached(rec *record.Record, n int, said bool) {
	if said && n >= 0 {
		rec.CachedPromptTokens, rec.HasCachedPromptTokens = int32(min(n, math.MaxInt32)), true
	}
}

func msDuration(ms float64) time.Duration {
	if ms <= 0 || ms != ms || ms > 1e12 {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
}
