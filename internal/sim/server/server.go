// Package server is the simulator's OpenAI-compatible HTTP surface: /v1/chat/completions,
// /v1/completions and /v1/responses (streaming and not), /v1/embeddings and /v1/rerank
// (prefill-only work on the same engine), /v1/models, /health and /metrics (vLLM's metric
// names), driven by any Generator (normally sim.Engine). It also injects faults and writes
// the ground-truth file against which a client's measurement error is measured.
package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Generator produces the token steps of a sequence. sim.Engine implements it: Submit sends
// a Step per engine step that emitted tokens for the sequence, at the step's wall-clock end,
// and closes the channel after the Done step; cancelling ctx aborts the sequence.
type Generator interface {
	Submit(ctx context.Context, r sim.SeqRequest) (<-chan sim.Step, error)
	Stats() sim.EngineStats
}

// Defaults for the zero values of Options.
const (
	DefaultModelName        = "llmbench-sim"
	DefaultMaxTokensLimit   = 131072
	DefaultDefaultMaxTokens = 256
	DefaultMaxBodyBytes     = 32 << 20
)

// Options configure a Server. Zero values take the defaults above.
type Options struct {
	// SessionHeader names the request header whose value is the request's session (the
	// session router keeps a session on one replica); "" is route.SessionHeader.
	SessionHeader string
	// ModelName is the one model served: listed by /v1/models; requests naming another
	// model get 404.
	ModelName string
	// APIKey, when set, is required on /v1/ routes as "Authorization: Bearer KEY".
	APIKey string
	// CountTokens counts a prompt's tokens; nil uses EstimateTokens. Without ChatTemplate,
	// chat prompts count each message's text (no chat-template overhead), so
	// usage.prompt_tokens matches what a client that built an exact-length prompt intended.
	CountTokens func(string) int
	// ChatTemplate, when set, formats chat and Responses conversations before they are
	// counted, as vLLM applies the model's chat template: usage.prompt_tokens then includes
	// the template's tokens, and a conversation the template refuses gets 400.
	ChatTemplate *chattemplate.Template
	// Tokenizer answers POST /tokenize and /detokenize (as vLLM and llama.cpp do); nil
	// leaves them unrouted (404), as on servers without them. When CountTokens is nil
	// it counts prompts too.
	Tokenizer tokenizer.Tokenizer
	// MaxTokensLimit is the largest max_tokens accepted (larger ones get 400).
	MaxTokensLimit int
	// DefaultMaxTokens applies when a request gives no max_tokens.
	DefaultMaxTokens int
	// MaxBodyBytes bounds a request body (larger ones get 413).
	MaxBodyBytes int64
	// BlockSize, when > 0, makes the server send the engine hashes of the prompt's full KV
	// blocks of this many tokens, for prefix caching.
	BlockSize int
	// Truth receives one JSON line (TruthLine) per finished request; buffered, flushed by
	// Flush and Close.
	Truth io.Writer
	// Faults are injected per request, chosen deterministically from Seed and the request's
	// arrival number.
	Faults Faults
	// Seed fixes fault choices and the generated text.
	Seed int64
	// ImagePatch (default 14 pixels) and ImageMerge (default 2) are the vision encoder's
	// patches and merge factor: an image of W × H pixels costs ceil(W/P)·ceil(H/P)/M²
	// prompt tokens (rounded up), as Qwen2-VL-style encoders count them; ImageEncode is the
	// encoder's time per image, spent before the request's prefill is queued.
	ImagePatch, ImageMerge int
	ImageEncode            time.Duration
	// Tools is how the simulated model answers requests that offer tools
	// (sim.ToolConfig.CallsTool): with a tool call streamed as vLLM streams one, or text.
	Tools sim.ToolConfig
}

// Validate reports every problem with o.
func (o Options) Validate() error {
	var errs []error
	if o.MaxTokensLimit < 0 {
		errs = append(errs, fmt.Errorf("server: MaxTokensLimit %d is negative", o.MaxTokensLimit))
	}
	if o.DefaultMaxTokens < 0 {
		errs = append(errs, fmt.Errorf("server: DefaultMaxTokens %d is negative", o.DefaultMaxTokens))
	}
	if o.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("server: MaxBodyBytes %d is negative", o.MaxBodyBytes))
	}
	if o.BlockSize < 0 {
		errs = append(errs, fmt.Errorf("server: BlockSize %d is negative", o.BlockSize))
	}
	d := o.withDefaults()
	if d.DefaultMaxTokens > d.MaxTokensLimit && o.MaxTokensLimit >= 0 {
		errs = append(errs, fmt.Errorf("server: DefaultMaxTokens %d exceeds MaxTokensLimit %d", d.DefaultMaxTokens, d.MaxTokensLimit))
	}
	if strings.ContainsAny(o.ModelName, "\x00\n") {
		errs = append(errs, errors.New("server: ModelName contains a control character"))
	}
	if err := o.Faults.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.ModelName == "" {
		o.ModelName = DefaultModelName
	}
	if o.CountTokens == nil && o.Tokenizer != nil {
		tok := o.Tokenizer
		o.CountTokens = func(s string) int { return len(tok.Encode(s)) }
	}
	if o.CountTokens == nil {
		o.CountTokens = EstimateTokens
	}
	if o.MaxTokensLimit == 0 {
		o.MaxTokensLimit = DefaultMaxTokensLimit
	}
	if o.DefaultMaxTokens == 0 {
		o.DefaultMaxTokens = min(DefaultDefaultMaxTokens, o.MaxTokensLimit)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Faults.RetryAfter <= 0 {
		o.Faults.RetryAfter = time.Second
	}
	if o.ImagePatch <= 0 {
		o.ImagePatch = 14
	}
	if o.ImageMerge <= 0 {
		o.ImageMerge = 2
	}
	return o
}

// Server is the HTTP handler. Close it after the http.Server has shut down to flush the
// ground truth.
type Server struct {
	g         Generator
	opts      Options
	lim       limits
	keyHash   [sha256.Size]byte
	idPrefix  string        // random per server, so ids are unique across restarts
	modelJSON []byte        // the model name as a JSON string
	seq       atomic.Uint64 // generation requests received
	inflight  atomic.Int64  // generation requests being handled
	faults    [numFaultKinds]atomic.Uint64
	truth     *truthLog
	metrics   *serverMetrics
	metricsH  http.Handler
	modelsDoc []byte
}

// New returns a Server serving g. It returns an error when opts are invalid.
func New(g Generator, opts Options) (*Server, error) {
	if g == nil {
		return nil, errors.New("server: nil Generator")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand panics instead)
	mj, _ := json.Marshal(opts.ModelName)
	s := &Server{
		g: g, opts: opts,
		lim: limits{
			model: opts.ModelName, maxTokens: opts.MaxTokensLimit,
			defaultMaxTokens: opts.DefaultMaxTokens, countTokens: opts.CountTokens,
			chatTemplate: opts.ChatTemplate,
			imagePatch:   opts.ImagePatch, imageMerge: opts.ImageMerge,
		},
		keyHash:   sha256.Sum256([]byte(opts.APIKey)),
		idPrefix:  hex.EncodeToString(rnd[:]),
		modelJSON: mj,
	}
	if opts.Truth != nil {
		s.truth = newTruthLog(opts.Truth)
	}
	s.metrics = newServerMetrics(opts.ModelName, s.engineSnapshot, s.replicaSnapshots(), &s.faults)
	s.metricsH = promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	s.modelsDoc = fmt.Appendf(nil, `{"object":"list","data":[{"id":%s,"object":"model","created":%d,"owned_by":"llmbench","root":%s}]}`,
		mj, time.Now().Unix(), mj)
	return s, nil
}

func (s *Server) engineSnapshot() engineSnapshot { return snapshotOf(s.g.Stats()) }

// replicaSnapshots reads each replica of a Generator serving several (sim.EngineFleet);
// nil for one engine.
func (s *Server) replicaSnapshots() func() []engineSnapshot {
	rs, ok := s.g.(interface{ ReplicaStats() []sim.EngineStats })
	if !ok || len(rs.ReplicaStats()) < 2 {
		return nil
	}
	return func() []engineSnapshot {
		list := rs.ReplicaStats()
		out := make([]engineSnapshot, len(list))
		for i, st := range list {
			out[i] = snapshotOf(st)
		}
		return out
	}
}

func snapshotOf(st sim.EngineStats) engineSnapshot {
	return engineSnapshot{
		running: float64(st.Running), waiting: float64(st.Waiting), kvUsage: st.KVUsage,
		preemptions: float64(st.Preemptions), prompt: float64(st.PromptTokens),
		generation: float64(st.GenerationTokens), prefixHits: float64(st.PrefixHits),
		prefixQueries: float64(st.PrefixQueries), specDrafts: float64(st.SpecDrafts),
		specDraftTokens: float64(st.SpecDraftTokens), specAccepted: float64(st.SpecAcceptedTokens),
	}
}

// FaultsInjected returns how many faults of each kind were injected, by kind name.
func (s *Server) FaultsInjected() map[string]uint64 {
	out := make(map[string]uint64, numFaultKinds-1)
	for _, k := range FaultKinds() {
		out[k.String()] = s.faults[k].Load()
	}
	return out
}

// Flush writes buffered ground-truth lines to Options.Truth. The server also flushes by
// itself whenever no generation request is in flight.
func (s *Server) Flush() error {
	if s.truth == nil {
		return nil
	}
	return s.truth.flush()
}

// Close flushes the ground truth and reports the first error writing it. Options.Truth is
// the caller's to close.
func (s *Server) Close() error { return s.Flush() }

// ServeHTTP routes by path; errors are OpenAI-style JSON objects, including 404 and 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/v1/") && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="llmbench"`)
		writeAPIError(w, newAPIError(http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key",
			"missing or incorrect API key: send Authorization: Bearer <key>"))
		return
	}
	switch path {
	case "/v1/chat/completions", "/v1/completions":
		if !allow(w, r, http.MethodPost) {
			return
		}
		s.handleGenerate(w, r, path == "/v1/chat/completions", false)
	case "/v1/responses":
		if !allow(w, r, http.MethodPost) {
			return
		}
		s.handleGenerate(w, r, true, true)
	case "/v1/embeddings", "/v1/rerank", "/rerank":
		if !allow(w, r, http.MethodPost) {
			return
		}
		s.handlePrefill(w, r, path != "/v1/embeddings")
	case "/v1/models":
		if !allow(w, r, http.MethodGet) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.modelsDoc)
	case "/tokenize", "/detokenize":
		if s.opts.Tokenizer == nil {
			writeAPIError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "", "not_found", "no route for %s %s (this server has no tokenizer)", r.Method, path))
			return
		}
		if !allow(w, r, http.MethodPost) {
			return
		}
		s.handleTokenize(w, r, path == "/tokenize")
	case "/health":
		if !allow(w, r, http.MethodGet) {
			return
		}
		w.WriteHeader(http.StatusOK)
	case "/metrics":
		if !allow(w, r, http.MethodGet) {
			return
		}
		s.metricsH.ServeHTTP(w, r)
	default:
		writeAPIError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "", "not_found", "no route for %s %s", r.Method, path))
	}
}

// allow answers 405 unless r uses method (HEAD is allowed wherever GET is).
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", method)
	writeAPIError(w, newAPIError(http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed",
		"%s %s is not allowed; use %s", r.Method, r.URL.Path, method))
	return false
}

// authorized compares hashes in constant time, so neither the key nor its length leaks
// through timing.
func (s *Server) authorized(r *http.Request) bool {
	if s.opts.APIKey == "" {
		return true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], s.keyHash[:]) == 1
}

// readBody reads at most MaxBodyBytes and then lifts the connection's read deadline:
// http.Server.ReadTimeout is meant to bound a slow client's headers and body, but left in
// place it would also cancel the request's context once a long stream outlives it.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "", "body_too_large",
			"request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	size := 4096
	if r.ContentLength > 0 {
		size = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, size)
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			var ne net.Error
			switch {
			case errors.As(err, &mbe):
				return nil, newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "", "body_too_large",
					"request body exceeds the limit of %d bytes", limit)
			case errors.As(err, &ne) && ne.Timeout():
				return nil, newAPIError(http.StatusRequestTimeout, "invalid_request_error", "", "timeout",
					"request body was not received in time")
			}
			return nil, badRequest("", "reading the request body: %v", err)
		}
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{}) // unsupported writers: nothing to lift
	return buf, nil
}

// newID returns a response id unique per server and request, e.g. chatcmpl-1f2e…-2a.
func (s *Server) newID(chat bool, n uint64) string {
	b := make([]byte, 0, 48)
	if chat {
		b = append(b, "chatcmpl-"...)
	} else {
		b = append(b, "cmpl-"...)
	}
	b = append(b, s.idPrefix...)
	b = append(b, '-')
	b = strconv.AppendUint(b, n, 16)
	return string(b)
}

// HTTPServer returns an *http.Server for h whose limits keep slow or idle clients from
// pinning it: headers within 10 s, the whole request (headers and body) within 60 s, idle
// keep-alive connections closed after 120 s, headers at most 64 KiB. There is no
// WriteTimeout, which would cut long streams; Server lifts the read deadline once it has the
// body, so streams may run as long as they need.
func HTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// CloseAfterResponses makes srv close each connection d after every complete response,
// while the responses offer keep-alive: the habit of llama.cpp's server (d = 0) and of
// proxies with short idle timeouts, for testing clients against it. A request that arrives
// on such a connection in the gap is not served: the connection is closed under it with
// nothing sent back, as a closed socket would. Call before srv serves.
func CloseAfterResponses(srv *http.Server, d time.Duration) {
	type key struct{}
	var conns sync.Map // net.Conn -> *atomic.Bool: it served a response, and is closing
	prevCtx, prevState := srv.ConnContext, srv.ConnState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		closing := new(atomic.Bool)
		conns.Store(c, closing)
		return context.WithValue(ctx, key{}, closing)
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if prevState != nil {
			prevState(c, st)
		}
		switch st {
		case http.StateIdle: // the response is out, to its last byte
			if v, ok := conns.Load(c); ok && v.(*atomic.Bool).Load() {
				time.AfterFunc(d, func() { c.Close() })
			}
		case http.StateClosed, http.StateHijacked:
			conns.Delete(c)
		}
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		closing, _ := r.Context().Value(key{}).(*atomic.Bool)
		if closing == nil || r.ProtoMajor != 1 { // HTTP/2 is another habit
			h.ServeHTTP(w, r)
			return
		}
		if closing.Load() {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Keep-Alive", "timeout=5, max=100")
		h.ServeHTTP(w, r)
		closing.Store(true)
	})
}
