package record

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzRecordUnmarshal: decoding a records.jsonl line never panics; what it accepts encodes
// to a line that decodes to the same record and re-encodes byte for byte (AppendJSON is a
// fixed point after one pass), and the decoded events are consistent (their token counts
// sum to Events.Tokens, their times never go backwards). Seed corpus:
// testdata/fuzz/FuzzRecordUnmarshal.
//
//	go test ./internal/record -run '^$' -fuzz '^FuzzRecordUnmarshal$' -fuzztime 30s
func FuzzRecordUnmarshal(f *testing.F) {
	full := Record{Level: 1, Index: 7, Scheduled: 1500 * time.Millisecond, Sent: 1501 * time.Millisecond,
		Done: 2 * time.Second, ResponseID: "chatcmpl-\"x\"\u2028", InputTokens: 512, ServerPromptTokens: 515, CachedPromptTokens: 0, HasCachedPromptTokens: true,
		OutputTokens: 3, OutputTokensSource: SourceUsage, FirstContent: 1700 * time.Millisecond,
		Server: &ServerTimings{PromptTokens: 5, Prefill: 3 * time.Millisecond, Total: time.Second},
		Error:  &Error{Kind: KindDisconnect, Status: 0, Message: "cut <after> 2 events"}}
	full.Events.Base = full.Sent
	full.Events.Append(1600*time.Millisecond, 1)
	full.Events.Append(1700*time.Millisecond, 2)
	f.Add(AppendJSON(nil, &full))
	f.Add(AppendJSON(nil, &Record{Error: &Error{Kind: KindConnect, Message: "refused"}}))
	for _, s := range []string{
		`{"level":0,"index":0,"warmup":false,"scheduled_s":0.000000,"sent_s":0.5,"done_s":1,"events":[[0.6,1],[0.7,3]],"error":null}`,
		`{"level":0,"scheduled_s":1e-3,"sent_s":-0.25,"done_s":"1.5","events":[]}`,
		`{"level":2,"scheduled_s":0,"sent_s":1,"done_s":2,"events":[[0.5,1],[0.4,1]]}`,
		`{"level":0,"scheduled_s":0,"sent_s":0,"done_s":0,"events":[[0,0]]}`,
		`{"scheduled_s":0}`, `{"level":null}`, `[]`, `{"level":1} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var r Record
		if err := r.UnmarshalJSON(line); err != nil {
			return
		}
		sum := 0
		var prev time.Duration
		r.Events.Each(func(i int, at time.Duration, n int) {
			if n < 1 {
				t.Fatalf("event %d carries %d tokens", i, n)
			}
			if i > 0 && at < prev {
				t.Fatalf("event %d at %v before event %d at %v", i, at, i-1, prev)
			}
			sum, prev = sum+n, at
		})
		if sum != r.Events.Tokens() {
			t.Fatalf("events carry %d tokens, Events.Tokens says %d, for %q", sum, r.Events.Tokens(), line)
		}
		enc := AppendJSON(nil, &r)
		var r2 Record
		if err := r2.UnmarshalJSON(enc); err != nil {
			t.Fatalf("%q decoded, but its encoding %q does not: %v", line, enc, err)
		}
		enc2 := AppendJSON(nil, &r2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
		var r3 Record
		if err := r3.UnmarshalJSON(enc2); err != nil || !reflect.DeepEqual(r2, r3) {
			t.Fatalf("decode(encode(r)) differs: %+v vs %+v (%v)", r2, r3, err)
		}
		if recs, err := ReadAll(bytes.NewReader(append(append(enc, '\n'), enc2...))); err != nil || len(recs) != 2 {
			t.Fatalf("ReadAll of two encoded lines: %d records, %v", len(recs), err)
		}
		// The compact format holds exactly what JSONL does.
		bin := AppendCompact(AppendCompact(slices.Clone(compactMagic), &r2), &r2)
		if recs, err := ReadAll(bytes.NewReader(bin)); err != nil || len(recs) != 2 || !reflect.DeepEqual(recs[0], r2) || !reflect.DeepEqual(recs[1], r2) {
			t.Fatalf("compact round trip of %s: %d records, %v\n got %+v\nwant %+v", enc2, len(recs), err, recs, r2)
		}
	})
}

// FuzzCompactDecode: decoding any records.bin never panics, and what it accepts encodes
// back to the same record.
//
//	go test ./internal/record -run '^$' -fuzz '^FuzzCompactDecode$' -fuzztime 30s
func FuzzCompactDecode(f *testing.F) {
	r := sample()
	r.Error = &Error{Kind: KindHTTPStatus, Status: 429, Message: "slow", RetryAfter: time.Second}
	r.Phases = &Phases{Connect: time.Millisecond, Has: PhaseConnect}
	f.Add(AppendCompact(slices.Clone(compactMagic), &r))
	f.Add(slices.Clone(compactMagic))
	f.Add(append(slices.Clone(compactMagic), 0x7f, 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ReadAll(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := range recs {
			enc := AppendCompact(slices.Clone(compactMagic), &recs[i])
			again, err := ReadAll(bytes.NewReader(enc))
			if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], recs[i]) {
				t.Fatalf("record %d: %+v re-encodes to %+v (%v)", i, recs[i], again, err)
			}
		}
	})
}
