// Package client sends benchmark requests to an LLM serving endpoint and measures each
// one: HTTP API adapters (OpenAI chat and completions, and native APIs) over our own SSE
// and NDJSON readers, which stamp every stream event with the time its bytes were read.
// *Client implements load.Target.
package client

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// Config says where and how to send requests.
type Config struct {
	BaseURL string // e.g. http://127.0.0.1:8000 (a trailing /v1 is accepted)
	API     string // one of APIs()
	Model   string // may be empty until ListModels picked one
	APIKey  string // sent as a bearer token (x-api-key for anthropic); never logged

	Headers   http.Header    // added to every request; these override the defaults
	ExtraBody map[string]any // merged into every request body, overriding our keys
	IgnoreEOS bool           // send ignore_eos so the output length is exactly max_tokens
	// NoStream asks a generation API for one JSON document instead of a stream
	// (--stream=false): only E2EL and throughput are measured. Embeddings and rerank never
	// stream.
	NoStream bool
	// SessionHeader, when set, carries each request's session key (its conversation's or
	// agentic task's: workload.Request.Session) so that a router keeps the session on one
	// server; requests of no session go without it.
	SessionHeader string
	// Endpoint, when set, replaces the API's path (e.g. /rerank for /v1/rerank).
	Endpoint string
	// Temperature and TopP, when set, are sent as each API names them (--temperature,
	// --top-p); the extra body wins over them.
	Temperature, TopP *float64

	Timeout     time.Duration // whole request; 0 = none
	IdleTimeout time.Duration // no bytes for this long once the response began; 0 = none
	MaxConns    int           // connections to keep per host (= concurrency); 0 = no limit

	Tokenizer tokenizer.Tokenizer // counts output when the server gives no usage; may be nil

	CACert   string // PEM file of extra CAs trusted besides the system roots
	Insecure bool   // skip certificate verification (the caller warns and records it)
	HTTP2    bool   // allow HTTP/2 (h2 over TLS, h2c over plain HTTP)
	// ReadStamps stamps events when our goroutine reads them, not with the kernel's receive
	// time of their bytes (used where the kernel offers it: Linux, HTTP/1.1; rxstamp.go).
	ReadStamps bool
	// DisableKeepAlive opens a new connection for every request (--keep-alive=false).
	DisableKeepAlive bool
	// OnServerCloses, when set, is called once when the client finds that the server
	// closes every connection after its response (conn.go), with the count so far.
	OnServerCloses func(closed int)
	// SaveText keeps each response's generated text in its record (--save-text).
	SaveText bool
	// Dial, when set, connects to the target instead of TCP: an in-memory listener, so a
	// test's whole run can go on a synctest bubble's fake clock.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Names of the supported APIs.
const (
	APIOpenAIChat        = "openai-chat"        // /v1/chat/completions
	APIOpenAICompletions = "openai-completions" // /v1/completions
	APIOllama            = "ollama"             // /api/chat (NDJSON)
	APIOllamaGenerate    = "ollama-generate"    // /api/generate (NDJSON)
	APILlamaCpp          = "llamacpp"           // /completion
	APITGI               = "tgi"                // /generate_stream
	APIAnthropic         = "anthropic"          // /v1/messages
	APIOpenAIResponses   = "openai-responses"   // /v1/responses
	APIOpenAIEmbeddings  = "openai-embeddings"  // /v1/embeddings
	APIOllamaEmbed       = "ollama-embed"       // /api/embed
	APIRerank            = "rerank"             // /v1/rerank
)

// Unstreamed reports whether requests of api with noStream come back as one document
// rather than a stream (embeddings and rerank always do).
func Unstreamed(api string, noStream bool) bool {
	spec, ok := apiSpecs[api]
	return noStream || (ok && spec.unstreamed)
}

// Embeddings reports whether api is an embeddings API (--batch-size inputs per request).
func Embeddings(api string) bool { return api == APIOpenAIEmbeddings || api == APIOllamaEmbed }

// APIs lists the supported --api values.
func APIs() []string {
	names := make([]string, 0, len(apiSpecs))
	for n := range apiSpecs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.BaseURL == "" {
		errs = append(errs, errors.New("base URL is empty"))
	} else if u, err := url.Parse(c.BaseURL); err != nil {
		errs = append(errs, fmt.Errorf("base URL %q: %v", c.BaseURL, err))
	} else {
		if u.Scheme != "http" && u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("base URL %q: scheme must be http or https", u.Redacted()))
		}
		if u.Host == "" {
			errs = append(errs, fmt.Errorf("base URL %q has no host", u.Redacted()))
		}
		if u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("base URL %q: must not have a query or fragment", u.Redacted()))
		}
	}
	if _, ok := apiSpecs[c.API]; !ok {
		errs = append(errs, fmt.Errorf("API %q is not one of %s", c.API, strings.Join(APIs(), ", ")))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v is negative", c.Timeout))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("idle timeout %v is negative", c.IdleTimeout))
	}
	if t := c.Temperature; t != nil && !(*t >= 0) {
		errs = append(errs, fmt.Errorf("temperature %v: must be 0 or more", *t))
	}
	if p := c.TopP; p != nil && !(*p > 0 && *p <= 1) {
		errs = append(errs, fmt.Errorf("top_p %v: must be in (0, 1]", *p))
	}
	if c.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("max connections %d is negative", c.MaxConns))
	}
	for name, vals := range c.Headers {
		if !validHeaderName(name) {
			errs = append(errs, fmt.Errorf("header name %q is not a valid HTTP token", name))
		}
		for _, v := range vals {
			if strings.ContainsAny(v, "\r\n\x00") {
				errs = append(errs, fmt.Errorf("header %s: value contains a line break or NUL", name))
			}
		}
	}
	if c.ExtraBody != nil {
		if _, err := json.Marshal(c.ExtraBody); err != nil {
			errs = append(errs, fmt.Errorf("extra body cannot be encoded as JSON: %v", err))
		}
		if s, ok := c.ExtraBody["stream"]; ok && s != !c.NoStream {
			errs = append(errs, errors.New(`extra body sets "stream"; use --stream=true|false instead`))
		}
	}
	if c.Endpoint != "" && (!strings.HasPrefix(c.Endpoint, "/") || strings.ContainsAny(c.Endpoint, "?# ")) {
		errs = append(errs, fmt.Errorf("endpoint %q must be a path starting with / (no query)", c.Endpoint))
	}
	if c.CACert != "" {
		if _, err := loadCAs(c.CACert); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA certificate file: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA certificate file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// Client sends requests of one API to one server. Safe for concurrent use.
type Client struct {
	cfg       Config
	spec      *apiSpec
	http      *http.Client    // kept-alive connections
	httpFresh *http.Client    // a new connection per request (re-sends, --keep-alive=false)
	transport *http.Transport // http's
	fresh     *http.Transport // httpFresh's
	conns     *connTracker
	url       string // the endpoint
	// unstreamed: responses come as one JSON document (--stream=false, embeddings, rerank).
	unstreamed bool
	modelsURL  string
	header     http.Header // template, cloned per request
	body       bodyTemplate
	redactor   *strings.Replacer
	tok        tokenizer.Tokenizer
	base       time.Time // reference for the idle watch's monotonic stamps
}

// New makes a client for cfg, which must be valid.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	spec := apiSpecs[cfg.API]
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	conns := &connTracker{base: time.Now(), onHabit: cfg.OnServerCloses}
	// Kernel receive stamps on every connection (rxstamp.go); the kept-alive ones are also
	// watched for the server closing them (conn.go).
	dial := cfg.dialer()
	if !cfg.ReadStamps && kernelStamps {
		inner := dial
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := inner(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return wrapRx(conn), nil
		}
	}
	tr := newTransport(cfg, tlsCfg, conns.wrap(dial), true)
	fresh := newTransport(cfg, tlsCfg, dial, false)
	base := strings.TrimRight(cfg.BaseURL, "/")
	path := spec.path
	if cfg.NoStream && spec.wholePath != "" {
		path = spec.wholePath
	}
	if cfg.Endpoint != "" {
		path = cfg.Endpoint
	}
	if strings.HasPrefix(path, "/v1/") {
		base = strings.TrimSuffix(base, "/v1")
	}
	c := &Client{
		cfg:        cfg,
		spec:       spec,
		transport:  tr,
		fresh:      fresh,
		conns:      conns,
		http:       &http.Client{Transport: tr},
		httpFresh:  &http.Client{Transport: fresh},
		url:        base + path,
		unstreamed: Unstreamed(cfg.API, cfg.NoStream),
		modelsURL:  base + spec.modelsPath,
		tok:        cfg.Tokenizer,
		base:       time.Now(),
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http.CheckRedirect, c.httpFresh.CheckRedirect = noRedirect, noRedirect
	c.header = c.makeHeader()
	c.redactor = c.makeRedactor()
	if s := sampling(cfg); s != nil {
		cfg.ExtraBody = deepMerge(s, cfg.ExtraBody)
	}
	if c.body, err = newBodyTemplate(spec, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() {
	c.transport.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// ConnStats says what the client saw of the server's connections so far.
func (c *Client) ConnStats() ConnStats {
	return ConnStats{ClosedConnections: int(c.conns.closed.Load()), ClosesConnections: c.conns.habit.Load(),
		Retried: int(c.conns.retried.Load())}
}

// reuse says whether the next request may take a kept-alive connection.
func (c *Client) reuse() bool { return !c.cfg.DisableKeepAlive && !c.conns.habit.Load() }

// BaseURL is the server's base URL, as configured.
func (c *Client) BaseURL() string { return c.cfg.BaseURL }

// Model is the model requests name.
func (c *Client) Model() string { return c.cfg.Model }

func (c *Client) makeHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", c.spec.accept)
	if c.unstreamed {
		h.Set("Accept", "application/json")
	}
	h.Set("User-Agent", "llmbench")
	for k, v := range c.spec.headers {
		h.Set(k, v)
	}
	for k, vs := range authHeader(c.spec, c.cfg) {
		h[k] = vs
	}
	return h
}

// authHeader is what every call to the target carries: the API key in the API's way and
// the --header values (which override it).
func authHeader(spec *apiSpec, cfg Config) http.Header {
	h := http.Header{}
	h.Set("User-Agent", "llmbench")
	if cfg.APIKey != "" {
		spec.auth(h, cfg.APIKey)
	}
	for k, vs := range cfg.Headers {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// RedactedHeaders returns a copy of h fit for summaries and logs: the values of headers
// whose names look secret (SecretHeader) are replaced by "[REDACTED]".
func RedactedHeaders(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if SecretHeader(k) {
			vs = []string{"[REDACTED]"}
		}
		out[k] = slices.Clone(vs)
	}
	return out
}

// String describes the target without secrets, so printing a Config (even with %+v)
// cannot leak the key.
func (c Config) String() string {
	u := c.BaseURL
	if pu, err := url.Parse(u); err == nil {
		u = pu.Redacted()
	}
	key := "no API key"
	if c.APIKey != "" {
		key = "API key [REDACTED]"
	}
	return fmt.Sprintf("%s at %s, model %q, %s, headers %v", c.API, u, c.Model, key, RedactedHeaders(c.Headers))
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

// CheckHeaderName says why name is not an HTTP header's name (an RFC 9110 token).
func CheckHeaderName(name string) error {
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return fmt.Errorf("%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
		}
	}
	if name == "" {
		return fmt.Errorf("a header name is not empty")
	}
	return nil
}

// SecretHeader reports whether a header's value should never be shown: the caller stores
// --header values redacted when this says so.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"authorization", "api-key", "apikey", "token", "cookie", "secret", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// makeRedactor builds the replacer that scrubs secrets from every message we produce:
// servers echo keys in errors ("Incorrect API key provided: sk-…").
func (c *Client) makeRedactor() *strings.Replacer {
	var secrets []string
	add := func(v string) {
		if len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	add(c.cfg.APIKey)
	for k, vs := range c.cfg.Headers {
		if SecretHeader(k) {
			for _, v := range vs {
				add(v)
				if f := strings.Fields(v); len(f) == 2 { // "Bearer KEY"
					add(f[1])
				}
			}
		}
	}
	if u, err := url.Parse(c.cfg.BaseURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	if len(secrets) == 0 {
		return nil
	}
	// Longest first: the replacer tries old strings in argument order, so a whole
	// "Bearer KEY" value goes before the KEY inside it.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, v := range secrets {
		pairs = append(pairs, v, "[REDACTED]")
	}
	return strings.NewReplacer(pairs...)
}

const maxMessage = 512

// message makes an error message safe to store: secrets removed, bounded length, valid UTF-8.
func (c *Client) message(s string) string {
	if c.redactor != nil {
		s = c.redactor.Replace(s)
	}
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// ListModels asks the server which models it serves (/v1/models, or the native API's
// equivalent), in the server's order.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.modelsURL, nil)
	if err != nil {
		return nil, errors.New(c.message(err.Error()))
	}
	req.Header = c.header.Clone()
	req.Header.Del("Content-Type")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		msg := c.message(unwrapURLError(err).Error())
		if hint := (&record.Error{Kind: record.KindConnect, Message: msg}).Hint(); hint != "" {
			msg += ": " + hint
		}
		return nil, &wordedError{msg: "listing models: " + msg, err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("listing models at %s: %s", c.redactedURL(c.modelsURL), c.message(err.Error()))
	}
	if resp.StatusCode/100 != 2 {
		msg := fmt.Sprintf("listing models at %s: HTTP %d %s", c.redactedURL(c.modelsURL), resp.StatusCode, c.message(ErrorMessage(body)))
		hint := HTTPHint(resp.StatusCode, c.cfg.APIKey != "")
		if hint == "" && resp.StatusCode == http.StatusNotFound {
			hint = "the server has no model list there: give --model, and check --url (a base URL, without the API path) and --api"
		}
		if hint != "" {
			msg += ": " + hint
		}
		return nil, errors.New(msg)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
		ModelID string `json:"model_id"` // TGI /info
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("listing models at %s: response is not the expected JSON: %v", c.redactedURL(c.modelsURL), err)
	}
	// llama-server answers with both an OpenAI "data" list and an Ollama-style "models"
	// list of the same models: keep each id once, in order.
	var ids []string
	add := func(id string) {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, d := range list.Data {
		add(d.ID)
	}
	for _, m := range list.Models {
		if m.Name != "" {
			add(m.Name)
		} else {
			add(m.Model)
		}
	}
	add(list.ModelID)
	if len(ids) == 0 {
		return nil, fmt.Errorf("listing models at %s: the server lists no models", c.redactedURL(c.modelsURL))
	}
	return ids, nil
}

func (c *Client) redactedURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// unwrapURLError drops net/http's `Post "URL":` prefix: the URL is the same for every
// request and only repeats what the summary already says.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sampling is --temperature and --top-p in the API's body: top level for OpenAI's APIs,
// llama.cpp's and Anthropic's, under "options" for Ollama's, "parameters" for TGI's.
func sampling(cfg Config) map[string]any {
	m := map[string]any{}
	if cfg.Temperature != nil {
		m["temperature"] = *cfg.Temperature
	}
	if cfg.TopP != nil {
		m["top_p"] = *cfg.TopP
	}
	if len(m) == 0 {
		return nil
	}
	switch cfg.API {
	case APIOpenAIEmbeddings, APIOllamaEmbed, APIRerank:
		return nil // nothing is sampled
	case APIOllama, APIOllamaGenerate:
		return map[string]any{"options": m}
	case APITGI:
		return map[string]any{"parameters": m}
	}
	return m
}

// bodyTemplate builds request bodies. The fixed part (model, stream options, extra body)
// is encoded once; the per-request part (prompt, max_tokens) is appended per request.
// When the extra body overrides a per-request key, every body is built by merging maps.
type bodyTemplate struct {
	spec   *apiSpec
	static map[string]any // fixed fields with the extra body merged in
	extra  map[string]any
	prefix []byte // encoded static, without its closing brace; nil on the slow path
}

func newBodyTemplate(spec *apiSpec, cfg Config) (bodyTemplate, error) {
	st := spec.static(cfg)
	merged := deepMerge(deepClone(st), cfg.ExtraBody)
	t := bodyTemplate{spec: spec, static: st, extra: cfg.ExtraBody}
	fast := true
	for _, k := range spec.requestKeys {
		if _, ok := merged[k]; ok {
			fast = false
		}
	}
	if fast {
		b, err := marshalJSON(merged)
		if err != nil {
			return t, err
		}
		t.prefix = bytes.TrimSuffix(b, []byte("}"))
	}
	return t, nil
}

// build returns the body for req.
func (t *bodyTemplate) build(req workload.Request) ([]byte, error) {
	per := t.spec.perRequest(req)
	if t.prefix == nil {
		m := deepMerge(deepMerge(deepClone(t.static), per), t.extra)
		return marshalJSON(m)
	}
	b := make([]byte, 0, len(t.prefix)+len(req.Prompt)+64)
	b = append(b, t.prefix...)
	sep := len(t.prefix) > 1
	for _, k := range t.spec.requestKeys {
		v, ok := per[k]
		if !ok {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		kb, _ := marshalJSON(k)
		vb, err := marshalJSON(v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}

// marshalJSON encodes without HTML escaping (prompts are sent as they are) and without
// the encoder's trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func deepClone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepClone(sub)
		}
		out[k] = v
	}
	return out
}

// deepMerge copies src into dst, merging nested objects (so --extra-body
// '{"stream_options":{"continuous_usage_stats":true}}' keeps include_usage) and letting
// src win elsewhere.
func deepMerge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				dst[k] = deepMerge(deepClone(dv), sv)
				continue
			}
			v = deepClone(sv)
		}
		dst[k] = v
	}
	return dst
}

// wordedError says an error in the client's own words (the target's URL redacted, a hint
// added) and keeps the error itself, so that a caller can still tell a timeout.
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }
