package server

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("http500=0.01, http429=0.02:2s,disconnect=0.01,stall=0.01:5s,malformed=0.01,error_event=0.01")
	if err != nil {
		t.Fatal(err)
	}
	want := Faults{StallFor: 5 * time.Second, RetryAfter: 2 * time.Second}
	want.Prob = [numFaultKinds]float64{0, 0.01, 0.02, 0.01, 0.01, 0.01, 0.01}
	if f != want {
		t.Fatalf("got %+v, want %+v", f, want)
	}
	if s := f.String(); s != "http500=0.01,http429=0.02:2s,disconnect=0.01,stall=0.01:5s,malformed=0.01,error_event=0.01" {
		t.Fatalf("String() = %q", s)
	}
	if g, err := ParseFaults(f.String()); err != nil || g != f {
		t.Fatalf("round trip: %+v %v", g, err)
	}
	if f, err := ParseFaults(""); err != nil || f.Enabled() {
		t.Fatalf("empty spec: %+v %v", f, err)
	}

	bad := []struct{ spec, want string }{
		{"http503=0.1", `unknown kind "http503"`},
		{"http500", "want KIND=PROBABILITY"},
		{"http500=abc", `probability "abc" is not a number`},
		{"http500=1.5", "outside [0, 1]"},
		{"http500=-0.1", "outside [0, 1]"},
		{"http500=NaN", "outside [0, 1]"},
		{"stall=0.1", "stall needs a duration"},
		{"stall=0.1:soon", `duration "soon"`},
		{"stall=0.1:-1s", "positive duration"},
		{"malformed=0.1:1s", "malformed takes no duration"},
		{"http500=0.1,http500=0.2", "given twice"},
		{"http500=0.6,disconnect=0.6", "sum to 1.2"},
	}
	for _, b := range bad {
		if _, err := ParseFaults(b.spec); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseFaults(%q) = %v, want an error containing %q", b.spec, err, b.want)
		}
	}
	// Every problem at once.
	_, err = ParseFaults("bogus=1,stall=2,http429=x")
	for _, want := range []string{"bogus", "outside [0, 1]", "stall needs a duration", `"x" is not a number`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("combined error %v lacks %q", err, want)
		}
	}
}

func TestFaultChoice(t *testing.T) {
	f, _ := ParseFaults("http500=0.1,http429=0.05,disconnect=0.2,stall=0.05:1s,malformed=0.1,error_event=0.15")
	const n = 200000
	var counts [numFaultKinds]int
	for i := range uint64(n) {
		k, at := f.choose(42, i, 100)
		k2, at2 := f.choose(42, i, 100)
		if k != k2 || at != at2 {
			t.Fatal("choice is not deterministic")
		}
		if k != FaultNone && (at < 1 || at > 99) {
			t.Fatalf("fault point %d outside [1, 99]", at)
		}
		counts[k]++
	}
	for k := FaultHTTP500; k < numFaultKinds; k++ {
		p := f.Prob[k]
		sd := math.Sqrt(p * (1 - p) / n)
		if got := float64(counts[k]) / n; math.Abs(got-p) > 5*sd {
			t.Errorf("%s: frequency %.4f, want %.4f ± %.4f", k, got, p, 5*sd)
		}
	}
	same := 0
	for i := range uint64(1000) {
		a, _ := f.choose(1, i, 100)
		b, _ := f.choose(2, i, 100)
		if a == b {
			same++
		}
	}
	if same > 700 {
		t.Fatalf("seeds 1 and 2 agree on %d of 1000 choices", same)
	}
	if k, at := f.choose(7, 3, 1); k != FaultNone && at != 1 {
		t.Fatalf("max_tokens 1: fault point %d", at)
	}
}

func only(k FaultKind) Faults {
	f := Faults{StallFor: 30 * time.Millisecond, RetryAfter: 1500 * time.Millisecond}
	f.Prob[k] = 1
	return f
}

// streamOutcome classifies one streaming response the way a client would.
type streamOutcome struct {
	status    int
	events    []string
	readErr   error
	tokens    int
	done      bool // [DONE] seen
	malformed int
	errEvents int
}

func doStream(t testing.TB, ts *httptest.Server, body string) streamOutcome {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(body))
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	o := streamOutcome{status: resp.StatusCode}
	b, err := io.ReadAll(resp.Body)
	o.readErr = err
	if resp.StatusCode != 200 {
		return o
	}
	for _, ev := range strings.Split(string(b), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			continue
		}
		o.events = append(o.events, data)
		var c chunk
		switch {
		case data == "[DONE]":
			o.done = true
		case json.Unmarshal([]byte(data), &c) != nil:
			o.malformed++
		case c.Error != nil:
			o.errEvents++
		case len(c.Choices) > 0 && c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil:
			o.tokens += len(strings.Fields(*c.Choices[0].Delta.Content))
		}
	}
	return o
}

const faultBody = `{"model":"llmbench-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":20,"stream":true}`

func TestFaultKindsStreaming(t *testing.T) {
	for _, k := range FaultKinds() {
		t.Run(k.String(), func(t *testing.T) {
			g := &fakeGen{}
			var truth strings.Builder
			s, ts := newTestServer(t, g, Options{Faults: only(k), Seed: 3, Truth: &truth})
			const reqs = 3
			for range reqs {
				start := time.Now()
				o := doStream(t, ts, faultBody)
				switch k {
				case FaultHTTP500:
					if o.status != 500 {
						t.Fatalf("status %d", o.status)
					}
				case FaultHTTP429:
					if o.status != 429 {
						t.Fatalf("status %d", o.status)
					}
				case FaultDisconnect:
					if !errors.Is(o.readErr, io.ErrUnexpectedEOF) || o.done || o.tokens < 1 || o.tokens >= 20 {
						t.Fatalf("disconnect: err %v, done %v, %d tokens", o.readErr, o.done, o.tokens)
					}
				case FaultStall:
					if o.readErr != nil || !o.done || o.tokens != 20 || time.Since(start) < 30*time.Millisecond {
						t.Fatalf("stall: %+v after %v", o, time.Since(start))
					}
				case FaultMalformed:
					if o.readErr != nil || o.malformed != 1 || !o.done || o.tokens != 20 {
						t.Fatalf("malformed: %+v", o)
					}
				case FaultErrorEvent:
					if o.readErr != nil || o.errEvents != 1 || !o.done || o.tokens >= 20 || o.events[len(o.events)-2][:9] != `{"error":` {
						t.Fatalf("error_event: %+v", o)
					}
				}
			}
			// Retry-After on 429.
			if k == FaultHTTP429 {
				resp := post(t, ts, "/v1/completions", `{"prompt":"hi"}`)
				e := decodeError(t, resp)
				if resp.Header.Get("Retry-After") != "2" || e.Code == nil || *e.Code != "rate_limit_exceeded" {
					t.Fatalf("429: Retry-After %q, %+v", resp.Header.Get("Retry-After"), e)
				}
			}
			ts.Close()
			got := s.FaultsInjected()
			for _, other := range FaultKinds() {
				want := uint64(0)
				if other == k {
					want = reqs
					if k == FaultHTTP429 {
						want++ // the Retry-After check
					}
				}
				if got[other.String()] != want {
					t.Fatalf("FaultsInjected()[%s] = %d, want %d", other, got[other.String()], want)
				}
			}
			if m := metricsText(t, s); !strings.Contains(m, `llmbench_faults_injected_total{kind="`+k.String()+`"} `) {
				t.Fatalf("metrics lack the %s counter", k)
			}
			// Mid-stream faults are in the ground truth; pre-stream ones have no response id.
			_ = s.Close()
			lines := strings.Split(strings.TrimSpace(truth.String()), "\n")
			if k <= FaultHTTP429 {
				if truth.Len() != 0 {
					t.Fatalf("truth for %s: %q", k, truth.String())
				}
				return
			}
			if len(lines) != reqs {
				t.Fatalf("%d truth lines", len(lines))
			}
			for _, l := range lines {
				var tl TruthLine
				if err := json.Unmarshal([]byte(l), &tl); err != nil || tl.Fault != k.String() {
					t.Fatalf("truth line %s: %v", l, err)
				}
			}
		})
	}
}

func TestFaultKindsNonStreaming(t *testing.T) {
	body := `{"model":"llmbench-sim","prompt":"hi","max_tokens":4}`
	for _, k := range FaultKinds() {
		t.Run(k.String(), func(t *testing.T) {
			s, ts := newTestServer(t, &fakeGen{}, Options{Faults: only(k)})
			resp, err := ts.Client().Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if k == FaultDisconnect {
				if err == nil {
					t.Fatalf("disconnect: got a response, status %d", resp.StatusCode)
				}
				ts.Close()
				if n := s.FaultsInjected()[k.String()]; n != 1 {
					t.Fatalf("%d injected", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			ts.Close()
			var c chunk
			jerr := json.Unmarshal(b, &c)
			switch k {
			case FaultHTTP500, FaultHTTP429:
				if resp.StatusCode != map[FaultKind]int{FaultHTTP500: 500, FaultHTTP429: 429}[k] || c.Error == nil {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
			case FaultStall:
				if err != nil || jerr != nil || c.Usage == nil || c.Usage.CompletionTokens != 4 {
					t.Fatalf("%s %v", b, err)
				}
			case FaultMalformed:
				if jerr == nil {
					t.Fatalf("body is valid JSON: %s", b)
				}
			case FaultErrorEvent:
				if resp.StatusCode != 200 || c.Error == nil {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
			}
			if n := s.FaultsInjected()[k.String()]; n != 1 {
				t.Fatalf("%d injected", n)
			}
		})
	}
}

// With every request faulted, each fault the server counts is one the client observes.
func TestFaultsInjectedMatchObserved(t *testing.T) {
	f, err := ParseFaults("http500=0.15,http429=0.15,disconnect=0.2,stall=0.1:20ms,malformed=0.2,error_event=0.2")
	if err != nil {
		t.Fatal(err)
	}
	s, ts := newTestServer(t, &fakeGen{}, Options{Faults: f, Seed: 9})
	const n = 200
	var mu sync.Mutex
	observed := map[string]uint64{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			o := doStream(t, ts, faultBody)
			kind := "stall" // the only fault that leaves a complete, well-formed stream
			switch {
			case o.status == 500:
				kind = "http500"
			case o.status == 429:
				kind = "http429"
			case o.readErr != nil:
				kind = "disconnect"
			case o.malformed > 0:
				kind = "malformed"
			case o.errEvents > 0:
				kind = "error_event"
			case !o.done || o.tokens != 20:
				t.Errorf("unclassifiable outcome %+v", o)
			}
			mu.Lock()
			observed[kind]++
			mu.Unlock()
		})
	}
	wg.Wait()
	ts.Close()
	injected := s.FaultsInjected()
	total := uint64(0)
	for k, v := range injected {
		total += v
		if observed[k] != v {
			t.Errorf("%s: injected %d, observed %d", k, v, observed[k])
		}
	}
	if total != n {
		t.Fatalf("injected %d faults into %d requests", total, n)
	}
}

// A stall holds the stream for exactly its duration, then the backlog arrives as one event.
func TestStallTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := only(FaultStall)
		// Off the 100 ms step grid, so the stall's end never ties with a step.
		f.StallFor = 4950 * time.Millisecond
		var truth strings.Builder
		s, err := New(&fakeGen{interval: 100 * time.Millisecond}, Options{Faults: f, Truth: &truth, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(`{"prompt":"hi","max_tokens":100,"stream":true}`))
		start := time.Now()
		s.ServeHTTP(rec, req)
		_ = s.Close()
		_, at := f.choose(1, 1, 100)
		var tl TruthLine
		if err := json.Unmarshal([]byte(truth.String()), &tl); err != nil {
			t.Fatal(err)
		}
		// Events 1..at come every 100 ms; step at+1 (at (at+1)×100 ms) starts the stall; the
		// steps of the next 4.95 s pile up and go out as one event when it ends.
		backlog := min(50, 100-at)
		wantEvents := at + 1 + (100 - at - backlog)
		if tl.Fault != "stall" || tl.CompletionTokens != 100 || len(tl.EventUnix) != wantEvents {
			t.Fatalf("stall at %d: %d events (want %d), %+v", at, len(tl.EventUnix), wantEvents, tl)
		}
		gap := tl.EventUnix[at] - tl.EventUnix[at-1]
		if math.Abs(gap-5.05) > 1e-5 || tl.EventTokens[at] != backlog {
			t.Fatalf("gap after event %d: %.6f s carrying %d tokens, want 5.05 s and %d", at, gap, tl.EventTokens[at], backlog)
		}
		wantEnd := 10 * time.Second
		if at+50 >= 100 {
			wantEnd = time.Duration(at+1)*100*time.Millisecond + f.StallFor
		}
		if el := time.Since(start); el != wantEnd {
			t.Fatalf("stream took %v, want %v", el, wantEnd)
		}
	})
}
