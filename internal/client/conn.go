package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Connections to the target. Every call llmbench makes to the target — the generation
// requests, the model list, /tokenize, the /metrics scrape — goes through a transport made
// by newTransport from one Config, so TLS (--ca-cert, --insecure), the proxy from the
// environment and the dial and handshake timeouts are the same for all, and the API key and
// --header values are added by the same code (makeHeader).
//
// The re-send rule. A server may close a kept-alive connection at any time (llama.cpp's
// server closes every connection right after its streamed response, while answering
// "Keep-Alive: timeout=5"; proxies and load balancers close idle ones), and a request
// written into a connection the server is closing gets EOF or a reset with nothing back.
// Such a request is sent again, once, on a new connection, when all of these hold:
//   - the connection had already carried a request (net/http's Reused): a fresh
//     connection that fails is a server that fails, and is reported as such;
//   - not one byte of a response came back on it;
//   - the error is the connection ending: EOF, a reset, a broken pipe, or net/http's
//     "server closed idle connection".
// It is safe because a server that closed its end of the connection cannot have read the
// request: the request's bytes arrive at a socket that its application has closed (the
// kernel answers them with a reset), so no server work was started for it. Anything else —
// an HTTP error status (a 429 or 503 included, whose Retry-After is recorded), a failure
// after response bytes, a timeout, a second failure — stays a failure, counted by kind.
// The re-send's Sent is the request's Sent: the time lost is the client's (schedule lag),
// never TTFT; the record says Retried.

// dialFunc dials a connection to the target.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// newTransport is the one place a transport to the target is configured. keepAlive false
// opens a new connection for every request and closes it after the response.
func newTransport(cfg Config, tlsCfg *tls.Config, dial dialFunc, keepAlive bool) *http.Transport {
	idle := cfg.MaxConns
	if idle == 0 {
		idle = 1024
	}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	if cfg.HTTP2 {
		// h2 is negotiated by ALPN over TLS; plain http needs HTTP/1 off to use h2c.
		protos.SetHTTP2(true)
		if strings.HasPrefix(cfg.BaseURL, "http:") {
			protos.SetHTTP1(false)
			protos.SetUnencryptedHTTP2(true)
		}
	}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 30 * time.Second,
		// One connection per concurrent stream, all kept alive between requests, so
		// connection set-up does not land in the measured latencies.
		MaxConnsPerHost:     cfg.MaxConns,
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
		DisableKeepAlives:   !keepAlive,
		// A compressed stream would be buffered by the decompressor and hide event times.
		DisableCompression: true,
		ForceAttemptHTTP2:  cfg.HTTP2,
		Protocols:          protos,
	}
}

// tlsConfig is the TLS configuration of every connection to the target.
func tlsConfig(cfg Config) (*tls.Config, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.Insecure} //nolint:gosec // the user asked, and is warned
	if cfg.CACert != "" {
		pool, err := loadCAs(cfg.CACert)
		if err != nil {
			return nil, err
		}
		tlsCfg.RootCAs = pool
	}
	return tlsCfg, nil
}

// baseDialer is how every connection to the target is dialed, unless Config.Dial says.
var baseDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

func (c Config) dialer() dialFunc {
	if c.Dial != nil {
		return c.Dial
	}
	return baseDialer.DialContext
}

// SideClient returns an HTTP client for the calls to the target other than the measured
// ones (/tokenize, /metrics, model lists): the same TLS, proxy, timeouts, API key and
// headers as the benchmark's requests, on a transport of its own, so that these calls
// neither wait for nor take connections from the benchmark's pool.
func SideClient(cfg Config) (*http.Client, error) {
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	side := cfg
	side.MaxConns, side.HTTP2 = 2, false
	tr := newTransport(side, tlsCfg, cfg.dialer(), true)
	spec := apiSpecs[cfg.API]
	if spec == nil {
		spec = apiSpecs[APIOpenAIChat]
	}
	h := authHeader(spec, cfg)
	return &http.Client{
		Transport: headerTransport{base: tr, header: h},
		Timeout:   sideTimeout(cfg.Timeout),
		// A redirect would carry the key to wherever it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// sideTimeout bounds one side call: the run's request timeout, else 30 s.
func sideTimeout(t time.Duration) time.Duration {
	if t > 0 {
		return t
	}
	return 30 * time.Second
}

// headerTransport adds the target's authentication and --header values to each request
// (a request's own headers of the same name win, as Content-Type must).
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, vs := range t.header {
		if _, ok := req.Header[k]; !ok {
			r.Header[k] = vs
		}
	}
	return t.base.RoundTrip(r)
}

// ErrorMessage is the message of an error response's body: {"error":{"message":…}} (OpenAI,
// vLLM, llama.cpp), {"error":"…"} (Ollama, TGI), {"message":…}, {"detail":…} (FastAPI), an
// HTML error page's text (a proxy's or a plain web server's), else the body itself.
func ErrorMessage(body []byte) string {
	if t := htmlText(body); t != "" {
		return "an HTML page: " + t
	}
	var j struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &j) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var str string
		blank := func(s string) bool { return strings.TrimSpace(s) == "" } // " " says nothing
		switch {
		case json.Unmarshal(j.Error, &inner) == nil && !blank(inner.Message):
			return inner.Message
		case json.Unmarshal(j.Error, &str) == nil && !blank(str):
			return str
		case !blank(j.Message):
			return j.Message
		case json.Unmarshal(j.Detail, &str) == nil && !blank(str):
			return str
		}
	}
	return string(bytes.TrimSpace(body))
}

// HTTPHint says what to do about an HTTP error status from the target, or "".
func HTTPHint(status int, apiKeyGiven bool) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if apiKeyGiven {
			return "the server refused the key given with --api-key"
		}
		return "give the key with --api-key"
	}
	return ""
}

// closedConnErr reports whether err is a connection that ended under a request: EOF, a
// reset, a broken pipe, or net/http's word for a kept-alive connection the server closed.
func closedConnErr(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return true
	}
	// net/http's errServerClosedIdle is not exported.
	return strings.Contains(err.Error(), "server closed idle connection")
}

// portsExhausted reports whether a dial failed because no local port was free: new
// connections to one host:port at a high rate leave each port in TIME_WAIT for a minute.
func portsExhausted(err error) bool { return errors.Is(err, syscall.EADDRNOTAVAIL) }

// EphemeralPorts is the number of local ports the system gives outgoing connections, and
// how many new connections per second to one server that sustains (each port stays in
// TIME_WAIT for 60 s on Linux after the client closes). ok is false where it is not known.
func EphemeralPorts() (ports int, perSecond float64, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, false
	}
	ports = hi - lo + 1
	return ports, float64(ports) / 60, true
}

func portsMessage(err error) string {
	msg := "no free local port to connect from (" + err.Error() + "): every new connection to one server holds a port in TIME_WAIT for a minute after it closes"
	if ports, rate, ok := EphemeralPorts(); ok {
		msg += fmt.Sprintf(", so %d local ports sustain about %.0f new connections/s", ports, rate)
	}
	return msg + "; keep connections alive (--keep-alive, the default), lower the rate, or widen net.ipv4.ip_local_port_range"
}

// ConnStats is what the client saw of the server's connection habits.
type ConnStats struct {
	// ClosedConnections counts kept-alive connections the server closed after a complete
	// response (or before a second request on them could get one).
	ClosedConnections int
	// ClosesConnections says the server closes every connection after its response: the
	// client noticed, and opens a new connection per request since.
	ClosesConnections bool
	Retried           int // requests sent again on a new connection (the re-send rule above)
}

// closesAfter is how many server-closed connections, with none that carried two
// responses, make "the server closes every connection after its response".
const closesAfter = 3

// closeWindow is how soon after a response a server's close counts as closing "after its
// response" (an idle timeout of seconds is another habit, and not a reason to stop reusing).
const closeWindow = time.Second

// connTracker follows the kept-alive connections of one client.
type connTracker struct {
	base      time.Time
	closed    atomic.Int64 // connections the server closed after a response
	multiUse  atomic.Bool  // some connection carried two complete responses
	habit     atomic.Bool  // the server closes every connection: stop reusing
	retried   atomic.Int64
	habitOnce sync.Once
	onHabit   func(closed int) // called once, from any goroutine, when habit is set
}

// trackedConn is a kept-alive connection whose end is watched. It embeds net.Conn, not
// a concrete type, so no ReadFrom/WriteTo is promoted past Read and Write.
type trackedConn struct {
	net.Conn
	t         *connTracker
	responses atomic.Int32 // complete responses it carried
	reading   atomic.Bool  // a response is being read on it
	lastDone  atomic.Int64 // ns since t.base when the latest response completed
	peerEnd   atomic.Bool  // the server ended it (EOF or reset)
	pending   atomic.Bool  // the server ended it while a response was being read
	counted   atomic.Bool
}

func (t *connTracker) wrap(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &trackedConn{Conn: c, t: t}, nil
	}
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n == 0 && err != nil && closedConnErr(err) && c.peerEnd.CompareAndSwap(false, true) {
		if c.reading.Load() {
			// Either the response is being cut (a failure, not a habit) or its last bytes
			// were read and net/http peeks for the next response before our reader has
			// said it is complete: responseDone decides.
			c.pending.Store(true)
		} else {
			c.closedAfterResponse()
		}
	}
	return n, err
}

// closedAfterResponse counts the connection's end if it came after a response.
func (c *trackedConn) closedAfterResponse() {
	if c.responses.Load() == 0 {
		return
	}
	since := time.Since(c.t.base) - time.Duration(c.lastDone.Load())
	if since > closeWindow || !c.counted.CompareAndSwap(false, true) {
		return
	}
	c.t.closed.Add(1)
	c.t.check()
}

// responseStarted marks the first byte of a response on c.
func (c *trackedConn) responseStarted() { c.reading.Store(true) }

// responseDone marks the end of the response being read on c: complete, or not.
func (c *trackedConn) responseDone(complete bool) {
	if complete {
		c.lastDone.Store(int64(time.Since(c.t.base)))
		if c.responses.Add(1) >= 2 {
			c.t.multiUse.Store(true)
		}
	}
	c.reading.Store(false)
	if complete && c.pending.Load() {
		c.closedAfterResponse()
	}
}

// check sets the habit once enough connections were closed after one response each.
func (t *connTracker) check() {
	if t.multiUse.Load() || t.closed.Load() < closesAfter {
		return
	}
	t.habitOnce.Do(func() {
		t.habit.Store(true)
		if t.onHabit != nil {
			t.onHabit(int(t.closed.Load()))
		}
	})
}

// trackedOf returns the trackedConn under c (plain or TLS), or nil.
func trackedOf(c net.Conn) *trackedConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	tc, _ := c.(*trackedConn)
	return tc
}

// maxHTMLText bounds the text kept of an HTML error page: its gist, not the page.
const maxHTMLText = 240

// htmlText is the visible text of body when it is an HTML page (tags, scripts and styles
// dropped, entities decoded, white space collapsed, at most maxHTMLText bytes), else "".
func htmlText(body []byte) string {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '<' {
		return "" // JSON or text that may quote a page: not a page itself
	}
	head := strings.ToLower(string(b[:min(len(b), 512)]))
	if !strings.HasPrefix(head, "<!doctype html") && !strings.HasPrefix(head, "<html") && !strings.Contains(head, "<head>") && !strings.Contains(head, "<body") {
		return ""
	}
	var out strings.Builder
	skip := "" // inside <script> or <style>: the closing tag that ends it
	for len(b) > 0 && out.Len() < 4*maxHTMLText {
		lt := bytes.IndexByte(b, '<')
		if lt < 0 {
			lt = len(b)
		}
		if skip == "" {
			out.Write(b[:lt])
			out.WriteByte(' ')
		}
		b = b[lt:]
		gt := bytes.IndexByte(b, '>')
		if gt < 0 {
			break
		}
		tag := strings.ToLower(string(b[1:gt]))
		switch {
		case skip != "" && strings.HasPrefix(tag, skip):
			skip = ""
		case skip == "" && (strings.HasPrefix(tag, "script") || strings.HasPrefix(tag, "style")):
			skip = "/" + strings.Fields(tag)[0]
		}
		b = b[gt+1:]
	}
	text := strings.Join(strings.Fields(html.UnescapeString(out.String())), " ")
	if len(text) > maxHTMLText {
		cut := maxHTMLText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return text
}
