package load

import (
	"slices"
	"testing"
	"time"
)

// recordingServer is a VirtualServer that only notes when each request reached it.
type recordingServer struct{ at []time.Duration }

func (*recordingServer) BlockSize() int                                                { return 0 }
func (*recordingServer) Check(_, _ int) error                                          { return nil }
func (*recordingServer) Next() (time.Duration, bool)                                   { return 0, false }
func (*recordingServer) Process(time.Duration, func(uint64, time.Duration, int, bool)) {}
func (*recordingServer) Kick(time.Duration)                                            {}
func (r *recordingServer) Live() int                                                   { return 0 }
func (r *recordingServer) Submit(_ uint64, _ int, _ []uint64, _ int, _ string, t time.Duration) error {
	r.at = append(r.at, t)
	return nil
}

// TestFrontEndTakesArrivalsInTurn: requests sent together reach the engine one front-end
// time apart, after half the round trip; one sent after the front end is free waits for
// nothing but the wire.
func TestFrontEndTakesArrivalsInTurn(t *testing.T) {
	rec := &recordingServer{}
	w := WithNetwork(rec, Network{RTT: 2 * time.Millisecond, FrontEnd: time.Millisecond})
	for id := range uint64(3) {
		if err := w.Submit(id, 10, nil, 1, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Submit(3, 10, nil, 1, "", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := w.Live(); n != 4 {
		t.Errorf("Live = %d before any arrival, want 4", n)
	}
	for now, ok := w.Next(); ok; now, ok = w.Next() {
		w.Process(now, func(uint64, time.Duration, int, bool) {})
	}
	want := []time.Duration{2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond, 12 * time.Millisecond}
	if !slices.Equal(rec.at, want) {
		t.Errorf("reached the engine at %v, want %v", rec.at, want)
	}
	if n := w.Live(); n != 0 {
		t.Errorf("Live = %d after every arrival, want 0", n)
	}
}

// TestPromptTimeDelaysEachRequest: the time per prompt token delays each request by its own
// prompt, in parallel (a long prompt does not hold up a short one sent with it), before
// the front end takes it in turn.
func TestPromptTimeDelaysEachRequest(t *testing.T) {
	rec := &recordingServer{}
	w := WithNetwork(rec, Network{RTT: 2 * time.Millisecond, FrontEnd: time.Millisecond, PerPromptToken: 10 * time.Microsecond})
	for id, prompt := range []int{1000, 100} { // 10 ms and 1 ms of front end's work
		if err := w.Submit(uint64(id), prompt, nil, 1, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	for now, ok := w.Next(); ok; now, ok = w.Next() {
		w.Process(now, func(uint64, time.Duration, int, bool) {})
	}
	want := []time.Duration{3 * time.Millisecond, 12 * time.Millisecond} // 1 + 1 + 1 (short), 1 + 10 + 1 (long)
	if !slices.Equal(rec.at, want) {
		t.Errorf("reached the engine at %v, want %v", rec.at, want)
	}
}
