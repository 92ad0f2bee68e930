package cli

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/memnet"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/testproc"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// End-to-end fault tests: a real `llmbench run` (in-process) against servers that fail in
// each way issue 7 lists. Every test checks that every request is in records.jsonl with its
// error kind, that summary.json counts the same failures, that the latency figures are
// computed from the completed requests only, and that the run ends in bounded time.

const faultModel = "fault-sim"

// startFaultySim serves a fast simulator (2 ms decode steps, negligible prefill) with the
// given --faults spec on a loopback port, as `llmbench serve --faults` does.
func startFaultySim(t *testing.T, spec string, seed int64) (url string, srv *server.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String(), serveFaultySim(t, spec, seed, sim.NewEngine, ln)
}

// startFaultySimInMemory is startFaultySim for a test in a synctest bubble: the engine on
// Go's timers, which the bubble's fake clock drives, and `llmbench run`'s requests over an
// in-memory listener, until the test ends.
func startFaultySimInMemory(t *testing.T, spec string, seed int64) (url string, srv *server.Server) {
	t.Helper()
	return memnet.URL, serveFaultySim(t, spec, seed, sim.NewEngineOnGoTimers, memTarget(t))
}

// memTarget is a listener that `llmbench run`'s requests reach, in memory, until the test
// ends: for a run in a synctest bubble.
func memTarget(t *testing.T) *memnet.Listener {
	ln := memnet.NewListener()
	dialTarget = ln.Dial
	t.Cleanup(func() { dialTarget = nil })
	return ln
}

// serveInMemory serves h to `llmbench run` through memTarget until the test ends, and
// returns the URL to run against.
func serveInMemory(t *testing.T, h http.Handler) string {
	hs := &http.Server{Handler: h}
	go hs.Serve(memTarget(t))
	t.Cleanup(func() { hs.Close() })
	return memnet.URL
}

// serveFaultySim serves startFaultySim's simulator on ln until the test ends.
func serveFaultySim(t *testing.T, spec string, seed int64, newEngine func(sim.Profile) *sim.Engine, ln net.Listener) *server.Server {
	t.Helper()
	fs, err := server.ParseFaults(spec)
	if err != nil {
		t.Fatalf("faults %q: %v", spec, err)
	}
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	p.Cost.DecodeStepMs, p.Cost.DecodeGrowth, p.Cost.PrefillMsPerToken = 2, 0, 0.001
	p.Seed = seed
	ctx, cancel := context.WithCancel(context.Background())
	eng := newEngine(p)
	go eng.Start(ctx)
	srv, err := server.New(eng, server.Options{ModelName: faultModel, Faults: fs, Seed: seed})
	if err != nil {
		cancel()
		ln.Close()
		t.Fatal(err)
	}
	hs := server.HTTPServer("", srv)
	go hs.Serve(ln)
	t.Cleanup(func() {
		hs.Close() // ends stalled streams at once
		cancel()
	})
	return srv
}

// generationOnly answers 404 to everything but POST /v1/chat/completions, so that the
// requests run makes besides generation (the /metrics probe, /v1/models) neither wait on a
// misbehaving handler nor take a turn in its request count.
func generationOnly(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	})
}

// faultRun is one finished `llmbench run`.
type faultRun struct {
	code           int
	stdout, stderr string
	wall           time.Duration
	recs           []record.Record
	sum            *report.Summary
}

// runAgainst runs `llmbench run` against url with a small closed-loop workload plus extra
// flags, and reads back its records and summary.
func runAgainst(t *testing.T, url string, requests int, extra ...string) faultRun {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"run", "--url", url, "--model", faultModel, "--concurrency", "8",
		"--requests", fmt.Sprint(requests), "--input-tokens", "16", "--output-tokens", "12",
		"--no-progress", "--test-request=false", "--output-dir", dir}, extra...) // faults are counted during the run
	loadDefaultTokenizer(t)
	t0 := time.Now()
	code, stdout, stderr := runCLI(t, context.Background(), args...)
	fr := faultRun{code: code, stdout: stdout, stderr: stderr, wall: time.Since(t0)}
	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatalf("exit %d, no records: %v\n%s", code, err, stderr)
	}
	defer f.Close()
	if fr.recs, err = record.ReadAll(f); err != nil {
		t.Fatalf("records.jsonl: %v", err)
	}
	fr.sum = readSummaryT(t, dir)
	return fr
}

// loadDefaultTokenizer loads the default tokenizer, once per process (about 2 s): before a
// run's clock starts, so its wall-time bound is about the run and its faults, and outside
// the synctest bubble that first uses it.
func loadDefaultTokenizer(t *testing.T) {
	t.Helper()
	if _, err := tokenizer.Load("o200k_base"); err != nil {
		t.Fatal(err)
	}
}

// errorKey is how a failed record is counted: its kind, plus the status for HTTP errors
// (500 and 429 are both http_status but different faults).
func errorKey(r *record.Record) string {
	if r.Error == nil {
		return "ok"
	}
	if r.Error.Kind == record.KindHTTPStatus {
		return fmt.Sprintf("%s/%d", r.Error.Kind, r.Error.Status)
	}
	return r.Error.Kind
}

// faultErrorKey maps an injected fault to the error key the client must record for it.
var faultErrorKey = map[string]string{
	"http500":     record.KindHTTPStatus + "/500",
	"http429":     record.KindHTTPStatus + "/429",
	"disconnect":  record.KindDisconnect,
	"stall":       record.KindIdleTimeout,
	"malformed":   record.KindMalformedEvent,
	"error_event": record.KindStreamError,
}

// checkAccounting checks what every fault test must hold: one record per request (no
// duplicates, none lost), per-key counts as wanted, summary.json's completed/failed/errors
// equal to the records', latency statistics over completed requests only, output tokens
// summed over completed requests only, and a wall time under limit.
func checkAccounting(t *testing.T, fr faultRun, requests int, want map[string]int, limit time.Duration) {
	t.Helper()
	if fr.wall > limit {
		t.Errorf("run took %v, want under %v (a fault must not hang the run)", fr.wall.Round(time.Millisecond), limit)
	}
	if len(fr.recs) != requests {
		t.Fatalf("%d records, want %d (every request, failed or not); stderr:\n%s", len(fr.recs), requests, fr.stderr)
	}
	seen := map[int]bool{}
	got := map[string]int{}
	kinds := map[string]int{}
	okTokens := 0
	for i := range fr.recs {
		r := &fr.recs[i]
		if seen[r.Index] {
			t.Errorf("request %d recorded twice", r.Index)
		}
		seen[r.Index] = true
		got[errorKey(r)]++
		if r.OK() {
			okTokens += r.OutputTokens
			continue
		}
		kinds[r.Error.Kind]++
		if r.Error.Message == "" {
			t.Errorf("request %d: %s error without a message", r.Index, r.Error.Kind)
		}
		if r.Done < r.Sent {
			t.Errorf("request %d: done %v before sent %v", r.Index, r.Done, r.Sent)
		}
	}
	if !mapsEqual(got, want) {
		t.Errorf("records by outcome %v, want %v", got, want)
	}
	if len(fr.sum.Levels) != 1 {
		t.Fatalf("%d levels in summary.json, want 1", len(fr.sum.Levels))
	}
	l := fr.sum.Levels[0]
	failed := requests - want["ok"]
	if l.Completed != want["ok"] || l.Failed != failed || l.Canceled != 0 {
		t.Errorf("summary: completed %d failed %d canceled %d, want %d, %d, 0", l.Completed, l.Failed, l.Canceled, want["ok"], failed)
	}
	if !mapsEqual(l.Errors, kinds) {
		t.Errorf("summary errors %v, records %v", l.Errors, kinds)
	}
	// Failures are excluded from the latency figures, not folded in (nor silently dropped:
	// they are counted above).
	for name, st := range map[string]int{"ttft": l.Metrics.Stat("ttft").Count, "tpot": l.Metrics.Stat("tpot").Count,
		"e2el": l.Metrics.Stat("e2el").Count} {
		if st != l.Completed {
			t.Errorf("%s computed over %d requests, want the %d completed", name, st, l.Completed)
		}
	}
	if l.TotalOutputTokens != okTokens {
		t.Errorf("total_output_tokens %d, completed requests carry %d", l.TotalOutputTokens, okTokens)
	}
	if fr.sum.EndReason != report.EndCompleted {
		t.Errorf("end_reason %q", fr.sum.EndReason)
	}
	wantCode := 0
	if want["ok"] == 0 {
		wantCode = ExitLevelErrors // a level without one successful request
	}
	if fr.code != wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", fr.code, wantCode, fr.stderr)
	}
}

// mapsEqual compares count maps, treating absent keys as zero.
func mapsEqual(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// Each injected fault, alone and all together: the client's count of each error kind
// equals the server's count of injected faults, and the rest complete. The whole run goes
// on a synctest bubble's fake clock, over an in-memory listener: on the real clock a loaded
// machine could keep a healthy stream's reader off the CPU for longer than --idle-timeout
// (400 ms, against 2 ms steps), and the idle watch, which sees only what has been read,
// then failed a healthy request as idle_timeout. On the fake clock time passes only while
// every goroutine waits, so only the stall (30 s) outlasts the idle timeout.
func TestFaultsInjectedEqualFaultsCounted(t *testing.T) {
	loadDefaultTokenizer(t)
	const requests = 48
	for _, tc := range []struct {
		name, spec string
		args       []string
	}{
		{"http500", "http500=0.3", nil},
		{"http429", "http429=0.3:2s", nil},
		{"disconnect", "disconnect=0.3", nil},
		{"stall", "stall=0.3:30s", nil},
		{"malformed", "malformed=0.3", nil},
		{"error_event", "error_event=0.3", nil},
		{"all", "http500=0.1,http429=0.1,disconnect=0.1,stall=0.1:30s,malformed=0.1,error_event=0.1", nil},
		{"all-completions", "http500=0.1,http429=0.1,disconnect=0.1,stall=0.1:30s,malformed=0.1,error_event=0.1",
			[]string{"--api", "openai-completions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				url, srv := startFaultySimInMemory(t, tc.spec, 7)
				// The stall (30 s) is far longer than --idle-timeout: the client must give up on
				// it, and only on it (healthy streams send a token every ~2 ms).
				fr := runAgainst(t, url, requests, append([]string{"--idle-timeout", "400ms", "--timeout", "20s", "--seed", "7"}, tc.args...)...)
				injected := srv.FaultsInjected()
				want := map[string]int{}
				total := 0
				for fault, n := range injected {
					if n == 0 {
						continue
					}
					if !strings.Contains(tc.spec, fault+"=") {
						t.Errorf("server injected %d %s faults that were not asked for", n, fault)
					}
					want[faultErrorKey[fault]] += int(n)
					total += int(n)
				}
				for _, item := range strings.Split(tc.spec, ",") {
					fault, _, _ := strings.Cut(item, "=")
					if injected[fault] == 0 {
						t.Errorf("no %s fault injected in %d requests: the test would prove nothing", fault, requests)
					}
				}
				want["ok"] = requests - total
				checkAccounting(t, fr, requests, want, 10*time.Second)
				for i := range fr.recs {
					r := &fr.recs[i]
					if r.Error != nil && r.Error.Kind == record.KindHTTPStatus && r.Error.Status == 429 &&
						!strings.Contains(r.Error.Message, "rate limit") {
						t.Errorf("429 record does not keep the server's message: %q", r.Error.Message)
					}
				}
				t.Logf("%d requests, injected %v, run took %v", requests, injected, fr.wall.Round(time.Millisecond))
				if t.Failed() {
					t.Logf("stdout:\n%s", fr.stdout)
				}
			})
		})
	}
}

// --timeout bounds the whole request: a server that never answers, and one that keeps a
// stream alive forever (bytes every 20 ms, so the idle timeout never fires), both end as
// kind timeout after about --timeout, while the fast requests between them complete. On
// synctest's fake clock, so that a loaded machine cannot push a fast request past 300 ms.
func TestWholeRequestTimeout(t *testing.T) {
	loadDefaultTokenizer(t)
	synctest.Test(t, testWholeRequestTimeout)
}

func testWholeRequestTimeout(t *testing.T) {
	var n atomic.Int64
	url := serveInMemory(t, generationOnly(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does net/http watch the connection and cancel
		// r.Context() when the client gives up.
		io.Copy(io.Discard, r.Body)
		switch n.Add(1) % 3 {
		case 1: // never sends headers
			<-r.Context().Done()
			return
		case 2: // streams tokens forever
			w.Header().Set("Content-Type", "text/event-stream")
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
					fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"}}]}\n\n")
					w.(http.Flusher).Flush()
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a b\"}}]}\n\n"+
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" c\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	const requests = 12
	fr := runAgainst(t, url, requests, "--timeout", "300ms", "--idle-timeout", "5s")
	t.Logf("run took %v", fr.wall.Round(time.Millisecond))
	checkAccounting(t, fr, requests, map[string]int{"ok": 4, record.KindTimeout: 8}, 5*time.Second)
	for i := range fr.recs {
		r := &fr.recs[i]
		if r.Error == nil {
			continue
		}
		if d := r.Done - r.Sent; d < 250*time.Millisecond || d > 2*time.Second {
			t.Errorf("request %d timed out after %v, want about 300ms", r.Index, d)
		}
		if !strings.Contains(r.Error.Message, "300ms") {
			t.Errorf("timeout message %q does not name the limit", r.Error.Message)
		}
	}
}

// Servers that answer 200 but not with an event stream: every request is recorded as
// failed with a kind that says what went wrong, none counts as completed, none feeds the
// latency figures, and the run exits 1 (nothing succeeded). Where two kinds are fair
// descriptions (a body with no event at all is both truncated and not a stream), either
// is accepted, but every request must get the same one. On synctest's fake clock.
func TestGarbageResponses(t *testing.T) {
	loadDefaultTokenizer(t)
	for _, tc := range []struct {
		name  string
		ct    string
		body  string
		kinds []string
	}{
		// Not SSE at all: no data lines, so no event and no end marker.
		{"html", "text/html", "<html><body><h1>502 Bad Gateway</h1>\n<p>nginx</p></body></html>\n",
			[]string{record.KindIncomplete, record.KindMalformedEvent}},
		// Binary noise, including NULs and a line that looks like a field.
		{"binary", "application/octet-stream", "\x00\xff\xfe\x01garbage\r\nretry: x\n\x7f\n\n",
			[]string{record.KindIncomplete, record.KindMalformedEvent}},
		// A JSON document: the server ignored "stream": true.
		{"json-document", "application/json", `{"id":"x","choices":[{"message":{"content":"hi"}}]}`,
			[]string{record.KindMalformedEvent}},
		// Event framing with data that is not JSON.
		{"data-not-json", "text/event-stream", "data: <html>oops</html>\n\ndata: [DONE]\n\n",
			[]string{record.KindMalformedEvent}},
		// 200 with an empty body: the stream ends before it begins.
		{"empty-body", "text/event-stream", "", []string{record.KindIncomplete}},
		// A well-formed stream that ends properly but carries no token.
		{"no-tokens", "text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			[]string{record.KindEmpty}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				url := serveInMemory(t, generationOnly(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", tc.ct)
					w.WriteHeader(http.StatusOK)
					fmt.Fprint(w, tc.body)
				}))
				const requests = 10
				fr := runAgainst(t, url, requests, "--idle-timeout", "2s", "--timeout", "5s")
				kind := "ok"
				if len(fr.recs) > 0 && fr.recs[0].Error != nil {
					kind = fr.recs[0].Error.Kind
				}
				if !slices.Contains(tc.kinds, kind) {
					t.Errorf("kind %s, want one of %v", kind, tc.kinds)
				}
				checkAccounting(t, fr, requests, map[string]int{kind: requests}, 5*time.Second)
				if !strings.Contains(fr.stderr, "no request of concurrency 8 succeeded") {
					t.Errorf("stderr does not say that nothing succeeded:\n%s", fr.stderr)
				}
			})
		})
	}
}

// A server whose port refuses connections: every request is recorded with kind connect,
// right away, and the run exits 4 (no request of the level succeeded).
func TestConnectRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	const requests = 6
	fr := runAgainst(t, url, requests, "--idle-timeout", "2s", "--timeout", "5s")
	checkAccounting(t, fr, requests, map[string]int{record.KindConnect: requests}, 5*time.Second)
	for i := range fr.recs {
		if m := fr.recs[i].Error.Message; !strings.Contains(m, "refused") {
			t.Errorf("connect error %q does not say the connection was refused", m)
		}
	}
}

// A cut mid-stream, on a server of our own (not the simulator): the records keep the
// tokens that arrived before the cut, the kind is disconnect, and the figures exclude them.
// On synctest's fake clock.
func TestDisconnectKeepsPartialTimings(t *testing.T) {
	loadDefaultTokenizer(t)
	synctest.Test(t, testDisconnectKeepsPartialTimings)
}

func testDisconnectKeepsPartialTimings(t *testing.T) {
	var n atomic.Int64
	url := serveInMemory(t, generationOnly(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		if n.Add(1)%2 == 0 {
			panic(http.ErrAbortHandler) // cut the connection
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	const requests = 8
	fr := runAgainst(t, url, requests, "--idle-timeout", "2s", "--timeout", "5s")
	checkAccounting(t, fr, requests, map[string]int{"ok": 4, record.KindDisconnect: 4}, 5*time.Second)
	var idx []int
	for i := range fr.recs {
		r := &fr.recs[i]
		if r.Error != nil && r.Events.Len() != 1 {
			idx = append(idx, r.Index)
		}
	}
	sort.Ints(idx)
	if len(idx) > 0 {
		t.Errorf("disconnected requests %v do not keep the one token event they received", idx)
	}
}

// The injected faults are also visible in the server's Prometheus metrics, so a run
// against `llmbench serve --faults` can be checked from outside too.
func TestFaultsOnServerMetrics(t *testing.T) {
	url, srv := startFaultySim(t, "http500=0.5", 3)
	fr := runAgainst(t, url, 16, "--seed", "3")
	n := int(srv.FaultsInjected()["http500"])
	checkAccounting(t, fr, 16, map[string]int{"ok": 16 - n, record.KindHTTPStatus + "/500": n}, 10*time.Second)
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`llmbench_faults_injected_total{kind="http500"} %d`, n)
	if !strings.Contains(string(b), line) {
		t.Errorf("/metrics lacks %q", line)
	}
}

// https targets: an unknown CA is a connect failure (every request recorded as such);
// --ca-cert trusts it; --insecure skips verification, warns on stderr and says so in
// summary.json.
func TestTLSVerification(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n"+
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	const requests = 4
	fr := runAgainst(t, srv.URL, requests)
	checkAccounting(t, fr, requests, map[string]int{record.KindConnect: requests}, 5*time.Second)
	if m := fr.recs[0].Error.Message; !strings.Contains(m, "certificate") {
		t.Errorf("connect error %q does not say the certificate was refused", m)
	}

	fr = runAgainst(t, srv.URL, requests, "--ca-cert", ca)
	checkAccounting(t, fr, requests, map[string]int{"ok": requests}, 5*time.Second)
	if strings.Contains(fr.stderr, "insecure") {
		t.Errorf("a verified run warns about --insecure:\n%s", fr.stderr)
	}

	fr = runAgainst(t, srv.URL, requests, "--insecure")
	checkAccounting(t, fr, requests, map[string]int{"ok": requests}, 5*time.Second)
	if !strings.Contains(fr.stderr, "warning: --insecure") {
		t.Errorf("--insecure does not warn on stderr:\n%s", fr.stderr)
	}
	if !fr.sum.Load.Insecure {
		t.Errorf("summary.json load %+v does not record insecure_tls", fr.sum.Load)
	}
}

// A process killed outright (SIGKILL: no chance to clean up) leaves a records.jsonl of
// whole lines, every one of them a finished request (the writer appends whole lines every
// 50 ms), and `llmbench report` should rebuild a summary from it.
func TestKilledRunLeavesValidRecords(t *testing.T) {
	bin := buildBinary(t)
	srv := pacedServer(t, 2*time.Millisecond, 2*time.Millisecond)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--url", srv.URL, "--concurrency", "4", "--requests", "100000",
		"--output-tokens", "8", "--input-tokens", "16", "--no-progress", "--output-dir", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := testproc.Start(t, cmd); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "records.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") >= 40 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no records after 30 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("records.jsonl does not end with a whole line: ...%q", b[max(0, len(b)-80):])
	}
	recs, err := record.ReadAll(strings.NewReader(string(b)))
	if err != nil || len(recs) < 40 {
		t.Fatalf("%d records readable after SIGKILL: %v", len(recs), err)
	}
	for _, r := range recs {
		if !r.OK() || r.Events.Len() != 8 {
			t.Fatalf("record %d: error %+v, %d events: a killed run must only hold finished requests", r.Index, r.Error, r.Events.Len())
		}
	}
	// summary.json is written when the run starts, so its configuration survives a kill.
	if s := readSummaryT(t, dir); s.EndReason != report.EndRunning || len(s.Levels) != 0 {
		t.Errorf("a killed run's summary.json: end_reason %q, %d levels", s.EndReason, len(s.Levels))
	}
	out := t.TempDir()
	code, _, errOut := runCLI(t, context.Background(), "report", dir, "--output-dir", out)
	if code != 0 {
		t.Fatalf("report on a killed run's records: exit %d\n%s", code, errOut)
	}
	s := readSummaryT(t, out)
	if len(s.Levels) != 1 || s.Levels[0].Completed != len(recs) || !s.Levels[0].Partial || s.Levels[0].Concurrency != 4 {
		t.Errorf("report rebuilt %d levels %+v; want 1 partial level at concurrency 4 with %d completed", len(s.Levels), s.Levels, len(recs))
	}
	if s.EndReason != report.EndKilled {
		t.Errorf("end_reason %q", s.EndReason)
	}
}
