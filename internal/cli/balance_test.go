package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/testtier"
)

// simEndpoint is a simulated server of its own engine; kill, when set, stops it listening
// after that many requests (a server killed mid-run), and sessions counts the session
// header's values it saw.
func simEndpoint(t *testing.T, kill int64) (*httptest.Server, *sync.Map) {
	return simEndpointOf(t, "textbook", kill)
}

// simEndpointOf is simEndpoint serving profile prof (a name or a YAML file).
func simEndpointOf(t *testing.T, prof string, kill int64) (*httptest.Server, *sync.Map) {
	t.Helper()
	p, err := sim.LoadProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(startEngine(t, p), server.ProfileOptions(p, 1))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var sessions sync.Map
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.Header.Get("X-Session-ID"); s != "" {
			sessions.Store(s, true)
		}
		if kill > 0 && strings.HasPrefix(r.URL.Path, "/v1/chat") && n.Add(1) == kill {
			go ts.Close() // refuses connections from now; the ones in flight finish
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &sessions
}

// TestRunBalancesOverEndpoints: run --url A --url B --url C --balance session keeps every
// agentic task on one endpoint (records' endpoint), sends its session key in X-Session-ID,
// reports each endpoint's figures (summary.json levels[].endpoints[], the console), and,
// when one endpoint dies mid-run, counts its failures and finishes on the others.
func TestRunBalancesOverEndpoints(t *testing.T) {
	a, sa := simEndpoint(t, 0)
	b, _ := simEndpoint(t, 12)
	c, _ := simEndpoint(t, 0)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI(t, t.Context(), "run", "--url", a.URL, "--url", b.URL, "--url", c.URL, "--balance", "session",
		"--workload", "agentic", "--calls-per-task", "3", "--tool-latency", "5", "--concurrency", "6", "--requests", "90",
		"--input-tokens", "32", "--output-tokens", "4", "--no-progress", "--metrics-url", "none", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	f, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	where := map[int]int{}
	failed := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		var r struct {
			Task, Endpoint int
			Error          *struct{ Kind string }
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Endpoint < 1 || r.Endpoint > 3 {
			t.Fatalf("record's endpoint %d: %s", r.Endpoint, line)
		}
		if r.Error != nil {
			failed[r.Endpoint]++
			continue
		}
		if w, ok := where[r.Task]; ok && w != r.Endpoint && w != 2 {
			// A task leaves endpoint 2 only when it died, and then for one endpoint.
			t.Errorf("task %d answered on endpoints %d and %d", r.Task, w, r.Endpoint)
		}
		where[r.Task] = r.Endpoint
	}
	if failed[1] != 0 || failed[3] != 0 || failed[2] == 0 {
		t.Errorf("failures by endpoint %v: want endpoint 2's alone", failed)
	}
	n := 0
	sa.Range(func(k, _ any) bool {
		if !strings.HasPrefix(k.(string), "task-") {
			t.Errorf("session header %q", k)
		}
		n++
		return true
	})
	if n == 0 {
		t.Error("no request carried X-Session-ID")
	}
	sum := readSummaryT(t, dir)
	es := sum.Levels[0].Endpoints
	if len(es) != 3 || es[1].URL != b.URL || es[1].Failed != failed[2] || es[0].Completed+es[1].Completed+es[2].Completed != sum.Levels[0].Completed {
		t.Errorf("levels[0].endpoints %+v", es)
	}
	if len(sum.Target.Endpoints) != 3 || sum.Target.Balance != "session" || sum.Target.SessionHeader != "X-Session-ID" {
		t.Errorf("target %+v", sum.Target)
	}
	for _, want := range []string{"By Endpoint", "endpoint 2 failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("console lacks %q:\n%s", want, stdout)
		}
	}
}

// TestBalanceNeedsEndpoints: --balance with one --url, or an unknown policy, is a usage
// error naming the problem; a dead endpoint at the test request is named.
func TestBalanceNeedsEndpoints(t *testing.T) {
	a, _ := simEndpoint(t, 0)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--url", a.URL, "--balance", "session"}, 2, "--balance session: spreads requests over several endpoints; give --url once for each"},
		{[]string{"--url", a.URL, "--url", a.URL, "--balance", "sticky"}, 2, `--balance: "sticky" is not one of round-robin, least-outstanding, session`},
		{[]string{"--url", a.URL, "--url", dead.URL}, 4, "endpoint 2 (" + dead.URL + ")"},
	} {
		code, _, stderr := runCLI(t, t.Context(), append([]string{"run"}, append(tc.args, "--requests", "2", "--no-progress", "--metrics-url", "none",
			"--output-dir", filepath.Join(t.TempDir(), "x"))...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, stderr)
		}
	}
}

// TestSimulateBalance: simulate --balance routes the profile's replicas by the policy run
// --balance spreads several --url by; a profile of one replica has none to spread.
func TestSimulateBalance(t *testing.T) {
	dir := t.TempDir()
	three := filepath.Join(dir, "three.yaml")
	if err := os.WriteFile(three, []byte("cost:\n  kind: linear\n  prefill_ms_per_token: 0.01\n  decode_step_ms: 8\n  decode_growth: 0.1\ndeployment:\n  replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, t.Context(), "simulate", "--sim", three, "--balance", "session", "--workload", "agentic",
		"--concurrency", "6", "--requests", "24", "--input-tokens", "32", "--output-tokens", "4", "--output-dir", filepath.Join(dir, "s"))
	if code != 0 || !strings.Contains(stdout, "router session") {
		t.Errorf("exit %d, want the session router named:\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--balance", "session", "--requests", "4", "--output-dir", filepath.Join(dir, "t"))
	if code != ExitUsage || !strings.Contains(stderr, "has one replica") {
		t.Errorf("one replica: exit %d, %s", code, stderr)
	}
}

// TestLiveSessionFleetAgreesWithSimulate: three served endpoints of a slot-bound profile,
// run with session balancing and an agentic workload, agree with the same run simulated on
// the profile's three replicas behind the session router, within calibrate's trust bound
// (25 % on TTFT and TPOT P50). Output lengths vary: with identical requests a closed loop
// on the virtual clock stays in lock-step (every task's next call at one instant, their
// prefills one batch), which a real clock's sub-millisecond sends break up
// (docs/measurements.md, several endpoints).
func TestLiveSessionFleetAgreesWithSimulate(t *testing.T) {
	testtier.Accuracy(t, "a live session-balanced fleet within 25 % of its simulation at TTFT and TPOT P50")
	prof := filepath.Join("..", "..", "bench", "linear16.yaml")
	a, _ := simEndpointOf(t, prof, 0)
	b, _ := simEndpointOf(t, prof, 0)
	c, _ := simEndpointOf(t, prof, 0)
	body, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, append(body, []byte("deployment:\n  replicas: 3\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--balance", "session", "--workload", "agentic", "--calls-per-task", "4", "--concurrency", "24",
		"--requests", "384", "--input-tokens", "256", "--output-tokens", "uniform:32:96", "--seed", "3", "--no-progress", "--quiet"}
	live, simulated := filepath.Join(t.TempDir(), "live"), filepath.Join(t.TempDir(), "sim")
	if code, stdout, stderr := runCLI(t, t.Context(), append([]string{"run", "--url", a.URL, "--url", b.URL, "--url", c.URL,
		"--metrics-url", "none", "--output-dir", live}, args...)...); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, t.Context(), append([]string{"simulate", "--sim", fleet, "--output-dir", simulated}, args...)...); code != 0 {
		t.Fatalf("simulate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	l, s := readSummaryT(t, live).Levels[0], readSummaryT(t, simulated).Levels[0]
	for _, key := range []string{"ttft", "tpot"} {
		lp, _ := l.Metrics.Stat(key).Get(50)
		sp, _ := s.Metrics.Stat(key).Get(50)
		if d := sp.Value/lp.Value - 1; d > 0.25 || d < -0.25 {
			t.Errorf("%s P50: live %.1f ms, simulated %.1f (%+.0f %%)", key, lp.Value, sp.Value, 100*d)
		} else {
			t.Logf("%s P50: live %.1f ms, simulated %.1f (%+.0f %%)", key, lp.Value, sp.Value, 100*d)
		}
	}
}
