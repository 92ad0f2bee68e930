package record

import (
	"math"
	"slices"
	"time"
)

// Events are the token-carrying stream events of one request, stored compactly: each event
// is a uint32 microsecond delta from the previous one (the first from Base), and the token
// count of an event is 1 unless listed in multi. Four bytes per event keeps a million-request
// run's records in memory (issue: bounded memory).
type Events struct {
	// Base is the reference point of event 0, normally the request's Sent; set it before the
	// first Append. Deltas from it (not from the run start) keep long runs within uint32 µs.
	Base   time.Duration
	deltas []uint32      // µs since the previous event (event 0: since Base)
	multi  []multiCount  // events carrying n != 1 tokens, by ascending index
	total  int           // sum of token counts
	last   time.Duration // time of the last event, so Append is O(1)
}

type multiCount struct {
	idx uint32
	n   uint32
}

// Append adds an event at offset t (from the run start) carrying n >= 1 tokens.
// Times are kept at microsecond precision and must not go backwards; a backwards time
// (impossible on a monotonic clock) is clamped to the previous one.
func (e *Events) Append(t time.Duration, n int) {
	n = min(max(n, 1), math.MaxInt32) // counts are stored in 32 bits (and int may be 32 bits)
	prev := e.Base
	if len(e.deltas) > 0 {
		prev = e.last
	}
	d := (t - prev) / time.Microsecond
	if d < 0 {
		d = 0
	}
	if d > math.MaxUint32 {
		d = math.MaxUint32
	}
	if n != 1 {
		e.multi = append(e.multi, multiCount{idx: uint32(len(e.deltas)), n: uint32(n)})
	}
	e.deltas = append(e.deltas, uint32(d))
	e.last = prev + d*time.Microsecond
	e.total += n
}

// Grow makes room for n more events, so a producer that knows the output length (the
// simulator) appends without reallocating.
func (e *Events) Grow(n int) {
	if n > 0 {
		e.deltas = slices.Grow(e.deltas, n)
	}
}

// Len is the number of events.
func (e *Events) Len() int { return len(e.deltas) }

// Tokens is the sum of the events' token counts.
func (e *Events) Tokens() int { return e.total }

// Time returns event i's offset from the run start. O(i) except for the last event;
// use Each to walk all events.
func (e *Events) Time(i int) time.Duration {
	if i == len(e.deltas)-1 {
		return e.last
	}
	t := e.Base
	for _, d := range e.deltas[:i+1] {
		t += time.Duration(d) * time.Microsecond
	}
	return t
}

// Each calls f for every event in order with its time and token count.
func (e *Events) Each(f func(i int, t time.Duration, n int)) {
	t := e.Base
	m := 0
	for i, d := range e.deltas {
		t += time.Duration(d) * time.Microsecond
		n := 1
		if m < len(e.multi) && e.multi[m].idx == uint32(i) {
			n = int(e.multi[m].n)
			m++
		}
		f(i, t, n)
	}
}

// EachGap calls f for each gap between consecutive events, in whole microseconds (event
// times are kept at µs precision, so these are exactly the stored deltas), with the token
// count of the later event.
func (e *Events) EachGap(f func(gap int64, n int)) {
	m := 0
	for i, d := range e.deltas {
		n := 1
		if m < len(e.multi) && e.multi[m].idx == uint32(i) {
			n = int(e.multi[m].n)
			m++
		}
		if i > 0 {
			f(int64(d), n)
		}
	}
}
