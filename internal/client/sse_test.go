package client

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// pieceReader returns its pieces one per Read, so a test chooses exactly how the stream is
// split across reads.
type pieceReader struct {
	pieces [][]byte
	err    error // returned after the last piece (io.EOF when nil)
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.pieces) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.pieces[0])
	if n < len(r.pieces[0]) {
		r.pieces[0] = r.pieces[0][n:]
	} else {
		r.pieces = r.pieces[1:]
	}
	return n, nil
}

// split cuts s at the given offsets.
func split(s string, cuts ...int) [][]byte {
	var out [][]byte
	prev := 0
	for _, c := range cuts {
		out = append(out, []byte(s[prev:c]))
		prev = c
	}
	return append(out, []byte(s[prev:]))
}

// readClock stands in for time.Now: the k-th call (one per Read) returns epoch + k ms, so
// an event's time says which read completed it.
type readClock struct{ calls int }

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *readClock) now() time.Time {
	c.calls++
	return epoch.Add(time.Duration(c.calls) * time.Millisecond)
}

type gotEvent struct {
	data, event string
	read        int // 1-based read that completed it
}

func readAll(t *testing.T, r io.Reader) ([]gotEvent, error) {
	t.Helper()
	clk := &readClock{}
	sr := newSSEReader(r, clk.now)
	var out []gotEvent
	for {
		data, ev, at, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, gotEvent{string(data), string(ev), int(at.Sub(epoch) / time.Millisecond)})
		if len(out) > 10000 {
			t.Fatal("runaway reader")
		}
	}
}

func TestSSEFraming(t *testing.T) {
	long := strings.Repeat("x", 300_000) // far over any fixed line cap
	for _, tc := range []struct {
		name   string
		pieces [][]byte
		want   []gotEvent
	}{
		{"several events in one read",
			split("data: a\n\ndata: b\n\ndata: [DONE]\n\n"),
			[]gotEvent{{"a", "", 1}, {"b", "", 1}, {"[DONE]", "", 1}}},
		{"one event across reads",
			split("data: {\"x\":1}\n\n", 3, 9, 14),
			[]gotEvent{{`{"x":1}`, "", 4}}},
		{"blank line arrives in the next read",
			split("data: a\n\ndata: b\n\n", 8, 17),
			[]gotEvent{{"a", "", 2}, {"b", "", 3}}},
		{"no space after colon, CRLF, comments",
			split(": keep-alive\r\n\r\ndata:a\r\n\r\n:ping\r\ndata: b\r\n\r\n", 20),
			[]gotEvent{{"a", "", 2}, {"b", "", 2}}},
		{"CR and LF split across reads",
			split("data: a\r\n\r\ndata: b\r\n\r\n", 8, 9, 10, 11),
			[]gotEvent{{"a", "", 4}, {"b", "", 5}}},
		{"multi-line data and event names",
			split("event: error\ndata: {\"a\":\ndata: 1}\n\nid: 7\nretry: 10\ndata: z\n\n"),
			[]gotEvent{{"{\"a\":\n1}", "error", 1}, {"z", "", 1}}},
		{"event name does not leak into the next event",
			split("event: ping\n\ndata: a\n\n"),
			[]gotEvent{{"a", "", 1}}},
		{"empty data line is an event",
			split("data:\n\n"),
			[]gotEvent{{"", "", 1}}},
		{"last event without blank line before EOF",
			split("data: a\n\ndata: [DONE]\n"),
			[]gotEvent{{"a", "", 1}, {"[DONE]", "", 1}}},
		{"last line without newline before EOF",
			split("data: a\n\ndata: [DONE]"),
			[]gotEvent{{"a", "", 1}, {"[DONE]", "", 1}}},
		{"a 300 KB line in 1 KB reads",
			chunks("data: "+long+"\n\ndata: end\n\n", 1024),
			[]gotEvent{{long, "", 293}, {"end", "", 293}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, &pieceReader{pieces: tc.pieces})
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events, want %d: %+v", len(got), len(tc.want), got)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d = {%.40q %q read %d}, want {%.40q %q read %d}", i,
						got[i].data, got[i].event, got[i].read, tc.want[i].data, tc.want[i].event, tc.want[i].read)
				}
			}
		})
	}
}

func chunks(s string, n int) [][]byte {
	var out [][]byte
	for len(s) > n {
		out = append(out, []byte(s[:n]))
		s = s[n:]
	}
	return append(out, []byte(s))
}

// TestSSEEverySplit cuts a stream at every pair of positions: the events must never
// change, and each must carry the time of the read that delivered its terminating blank line.
func TestSSEEverySplit(t *testing.T) {
	parts := []string{
		": hello\r\n\r\n",
		"data: {\"id\":\"a\"}\r\n\r\n",
		"data:{\"n\":1}\n\n",
		"event: x\ndata: 2\ndata: 3\n\n",
		"data: [DONE]\n\n",
	}
	stream := strings.Join(parts, "")
	type want struct {
		data, event string
		end         int // offset just past the terminating blank line
	}
	var wants []want
	off := 0
	for _, p := range parts {
		off += len(p)
		switch {
		case strings.HasPrefix(p, ":"):
		case strings.HasPrefix(p, "event"):
			wants = append(wants, want{"2\n3", "x", off})
		default:
			d := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(p), "data:"), " "))
			wants = append(wants, want{d, "", off})
		}
	}
	for i := 1; i < len(stream); i++ {
		for j := i; j < len(stream); j++ {
			got, err := readAll(t, &pieceReader{pieces: split(stream, i, j)})
			if err != io.EOF || len(got) != len(wants) {
				t.Fatalf("cuts %d,%d: %d events, err %v", i, j, len(got), err)
			}
			for k, w := range wants {
				read := 3
				switch {
				case w.end <= i:
					read = 1
				case w.end <= j:
					read = 2
				}
				if i == j && read == 3 {
					read = 2 // an empty middle piece is not a read that returns bytes
				}
				if got[k].data != w.data || got[k].event != w.event || got[k].read != read {
					t.Fatalf("cuts %d,%d: event %d = %+v, want data %q event %q read %d", i, j, k, got[k], w.data, w.event, read)
				}
			}
		}
	}
}

func TestSSEReadError(t *testing.T) {
	cut := errors.New("connection reset")
	got, err := readAll(t, &pieceReader{pieces: split("data: a\n\ndata: b"), err: cut})
	if !errors.Is(err, cut) {
		t.Fatalf("err = %v, want %v", err, cut)
	}
	if len(got) != 1 || got[0].data != "a" {
		t.Fatalf("events %+v", got)
	}
}

func TestLineReader(t *testing.T) {
	clk := &readClock{}
	lr := &lineReader{}
	lr.reset(&pieceReader{pieces: split("{\"a\":1}\n\r\n{\"b\"", 9, 13)}, clk.now)
	var got []string
	var reads []int
	for {
		line, at, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
		reads = append(reads, int(at.Sub(epoch)/time.Millisecond))
	}
	if strings.Join(got, "|") != `{"a":1}|{"b"` || reads[0] != 1 || reads[1] != 3 {
		t.Fatalf("lines %q reads %v", got, reads)
	}
	if !lr.cut {
		t.Error("an unterminated last line must be reported as cut")
	}
}

// TestSSEBufferReuse checks that a reader reused for a new body forgets the old one.
func TestSSEBufferReuse(t *testing.T) {
	sr := newSSEReader(bytes.NewReader([]byte("data: a\ndata: b")), time.Now)
	if _, _, _, err := sr.Next(); err != nil {
		t.Fatal(err)
	}
	sr.reset(bytes.NewReader([]byte("data: c\n\n")), time.Now)
	d, _, _, err := sr.Next()
	if err != nil || string(d) != "c" {
		t.Fatalf("got %q, %v", d, err)
	}
}

// TestSSELongLineSmallReads: a 4 MiB line arriving 64 bytes at a time. Rescanning the
// partial line on every read would make this quadratic (~130 GB scanned).
func TestSSELongLineSmallReads(t *testing.T) {
	long := strings.Repeat("y", 4<<20)
	got, err := readAll(t, &pieceReader{pieces: chunks("data: "+long+"\n\n", 64)})
	if err != io.EOF || len(got) != 1 || got[0].data != long {
		t.Fatalf("%d events, err %v", len(got), err)
	}
}
