package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// capture is a recorded exchange: the status and header time, and each body line with
// the time it arrived (from the *.timing.txt files beside the captures).
type capture struct {
	status    int
	headersAt time.Duration
	lines     []string
	at        []time.Duration
}

var (
	timingHeader = regexp.MustCompile(`^# HTTP (\d+) .*headers_at=([0-9.]+)ms`)
	timingLine   = regexp.MustCompile(`^\s*([0-9.]+)ms  `)
)

func parseMS(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Millisecond)).Round(100 * time.Microsecond)
}

func loadCapture(t *testing.T, timingPath, bodyPath string) capture {
	t.Helper()
	tf, err := os.ReadFile(timingPath)
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(bodyPath)
	if err != nil {
		t.Fatal(err)
	}
	var c capture
	sc := bufio.NewScanner(bytes.NewReader(tf))
	for sc.Scan() {
		if m := timingHeader.FindStringSubmatch(sc.Text()); m != nil {
			c.status, _ = strconv.Atoi(m[1])
			c.headersAt = parseMS(m[2])
		} else if m := timingLine.FindStringSubmatch(sc.Text()); m != nil {
			c.at = append(c.at, parseMS(m[1]))
		}
	}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.TrimSpace(l) != "" {
			c.lines = append(c.lines, l)
		}
	}
	if c.status == 0 || len(c.lines) != len(c.at) {
		t.Fatalf("%s: status %d, %d lines but %d times", timingPath, c.status, len(c.lines), len(c.at))
	}
	return c
}

// serve replays the capture with its original timing: the headers at headers_at, and
// lines that arrived at the same instant in one write (one HTTP chunk), as the server sent them.
func (c capture) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !wait(c.headersAt) {
		return
	}
	if c.status != 200 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(c.status)
		w.Write([]byte(strings.Join(c.lines, "\n")))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	rc.Flush()
	now := c.headersAt
	for i := 0; i < len(c.lines); {
		if !wait(c.at[i] - now) {
			return
		}
		now = c.at[i]
		var b strings.Builder
		for ; i < len(c.lines) && c.at[i] == now; i++ {
			b.WriteString(c.lines[i] + "\n")
			if !strings.HasPrefix(c.lines[i], "event:") {
				b.WriteString("\n") // an event's name and its data are one event
			}
		}
		w.Write([]byte(b.String()))
		rc.Flush()
	}
}

// TestReplayedCaptures replays each capture over HTTP with its recorded timing on virtual
// time: every token event must be stamped exactly when its line arrived, and the record
// must match the documented outcome.
func TestReplayedCaptures(t *testing.T) {
	timings, _ := filepath.Glob(filepath.Join(streamsDir, "*", "*.timing.txt"))
	if len(timings) == 0 {
		t.Fatalf("no *.timing.txt in %s", streamsDir)
	}
	for _, tp := range timings {
		bodyPath := strings.TrimSuffix(tp, ".timing.txt") + ".sse"
		rel, _ := filepath.Rel(streamsDir, bodyPath)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			c := loadCapture(t, tp, bodyPath)
			api := APIOpenAIChat
			switch {
			case strings.Contains(rel, "/completions"):
				api = APIOpenAICompletions
			case strings.Contains(rel, "responses"):
				api = APIOpenAIResponses
			}
			// Which lines carry tokens, by the decoder alone.
			var want []time.Duration
			var d decoder
			for i, l := range c.lines {
				if data, ok := strings.CutPrefix(l, "data: "); ok && apiSpecs[api].decode(&d, []byte(data), nil) == nil && d.ci.tokens {
					want = append(want, c.at[i])
				}
			}
			inBubble(t, http.HandlerFunc(c.serve), Config{API: api}, func(t *testing.T, cl *Client, _ *memListener) {
				var rec record.Record
				cl.Do(context.Background(), time.Now(), testReq, &rec)
				if c.status != 200 {
					// The message is the server's own, taken out of its JSON error body.
					want := ErrorMessage([]byte(strings.Join(c.lines, "\n")))
					if rec.Error == nil || rec.Error.Kind != record.KindHTTPStatus || rec.Error.Status != c.status ||
						rec.Error.Message != want || strings.Contains(want, `"error"`) {
						t.Errorf("error %+v, want http_status %d with the body's message %q", rec.Error, c.status, want)
					}
					return
				}
				tc, ok := recordedCases[rel]
				if !ok {
					t.Fatalf("no documented outcome for %s", rel)
				}
				checkRecord(t, rec, tc.want)
				var got []time.Duration
				rec.Events.Each(func(_ int, at time.Duration, _ int) { got = append(got, at-rec.Sent) })
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("event times\n got %v\nwant %v", got, want)
				}
				if last := c.at[len(c.at)-1]; rec.Done-rec.Sent != last {
					t.Errorf("done at %v, want %v (the last line)", rec.Done-rec.Sent, last)
				}
			})
		})
	}
}
