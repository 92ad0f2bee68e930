package record

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func sample() Record {
	r := Record{Level: 1, Index: 7, Scheduled: 1500 * time.Microsecond, Sent: 2 * time.Millisecond,
		Done: 90 * time.Millisecond, ResponseID: "chatcmpl-\"x\"", InputTokens: 512, ServerPromptTokens: 520, CachedPromptTokens: 9, HasCachedPromptTokens: true,
		OutputTokens: 4, OutputTokensSource: SourceUsage}
	r.Events.Base = r.Sent
	r.Events.Append(62*time.Millisecond+3*time.Microsecond, 1)
	r.Events.Append(77*time.Millisecond, 2)
	r.Events.Append(89*time.Millisecond, 1)
	return r
}

func TestEventsCompact(t *testing.T) {
	r := sample()
	if r.Events.Len() != 3 || r.Events.Tokens() != 4 {
		t.Fatalf("len %d tokens %d", r.Events.Len(), r.Events.Tokens())
	}
	if ft, _ := r.FirstToken(); ft != 62003*time.Microsecond {
		t.Errorf("first token %v", ft)
	}
	if lt, _ := r.LastToken(); lt != 89*time.Millisecond {
		t.Errorf("last token %v", lt)
	}
	var ns []int
	r.Events.Each(func(i int, _ time.Duration, n int) { ns = append(ns, n) })
	if !reflect.DeepEqual(ns, []int{1, 2, 1}) {
		t.Errorf("counts %v", ns)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample()
	failed := Record{Level: 0, Index: 1, Scheduled: time.Second, Sent: time.Second, Done: time.Second + time.Microsecond,
		Error: &Error{Kind: KindHTTPStatus, Status: 500, Message: `{"error":"boom"}`}}
	var buf bytes.Buffer
	for _, x := range []Record{r, failed} {
		buf.Write(AppendJSON(nil, &x))
		buf.WriteByte('\n')
	}
	got, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[0], r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got[0], r)
	}
	if !reflect.DeepEqual(got[1], failed) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got[1], failed)
	}
	want := `{"level":1,"index":7,"warmup":false,"scheduled_s":0.001500,"sent_s":0.002000,"first_token_s":0.062003,"last_token_s":0.089000,"done_s":0.090000,"response_id":"chatcmpl-\"x\"","input_tokens":512,"server_prompt_tokens":520,"cached_tokens":9,"output_tokens":4,"output_tokens_source":"usage","events":[[0.062003,1],[0.077000,2],[0.089000,1]],"error":null}`
	if s := string(AppendJSON(nil, &r)); s != want {
		t.Errorf("json:\n got %s\nwant %s", s, want)
	}
}

func TestJSONRoundTripServerTimings(t *testing.T) {
	r := sample()
	r.FirstContent = 77 * time.Millisecond
	r.KernelStamps, r.ReadLag = true, 1234*time.Microsecond
	r.Server = &ServerTimings{PromptTokens: 510, Prefill: 41250 * time.Microsecond, OutputTokens: 4,
		Decode: 26 * time.Millisecond, Total: 70 * time.Millisecond}
	line := AppendJSON(nil, &r)
	want := `"first_content_s":0.077000,"read_lag_s":0.001234,"server":{"prompt_tokens":510,"prefill_s":0.041250,"output_tokens":4,"decode_s":0.026000,"total_s":0.070000},"error":null}`
	if !bytes.HasSuffix(line, []byte(want)) {
		t.Errorf("json:\n got %s\nwant suffix %s", line, want)
	}
	var got Record
	if err := got.UnmarshalJSON(line); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
}

func TestReadAllNamesBadLine(t *testing.T) {
	r := sample()
	in := string(AppendJSON(nil, &r)) + "\n" + `{"level":0,"sent_s":"x"` + "\n"
	got, err := ReadAll(bytes.NewBufferString(in))
	if err == nil || len(got) != 1 {
		t.Fatalf("got %d records, err %v", len(got), err)
	}
	if want := "line 2"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("error %q does not name %q", err, want)
	}
}

// A killed writer's unterminated last line is skipped with ErrTruncated, after every
// complete record; a bad line anywhere else is an error of its own.
func TestEachTruncatedLastLine(t *testing.T) {
	r := sample()
	line := string(AppendJSON(nil, &r)) + "\n"
	got, err := ReadAll(strings.NewReader(line + line + line[:30]))
	if len(got) != 2 || !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("got %d records, err %v", len(got), err)
	}
	for _, in := range []string{line + line[:30] + "\n", line + line[:30] + "\n" + line} {
		if _, err := ReadAll(strings.NewReader(in)); err == nil || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: err %v, want a bad line 2", in, err)
		}
	}
	if got, err := ReadAll(strings.NewReader(line + strings.Repeat(" ", 1<<17) + "\n\n" + line)); err != nil || len(got) != 2 {
		t.Errorf("blank and long lines: %d records, %v", len(got), err)
	}
}

func TestWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "records.jsonl")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	for i := 0; i < 3; i++ {
		r.Index = i
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	got, err := ReadAll(f)
	if err != nil || len(got) != 3 || got[2].Index != 2 {
		t.Fatalf("got %d records, err %v", len(got), err)
	}
}

// TestJSONRoundTripRepeat: a repeated level's record says its run right after the index;
// a level run once omits it.
func TestJSONRoundTripRepeat(t *testing.T) {
	r := sample()
	if line := AppendJSON(nil, &r); bytes.Contains(line, []byte(`"repeat"`)) {
		t.Errorf("a record of a level run once has a repeat: %s", line)
	}
	r.Repeat = 3
	line := AppendJSON(nil, &r)
	if want := `{"level":1,"index":7,"repeat":3,"warmup":false,`; !bytes.HasPrefix(line, []byte(want)) {
		t.Errorf("json:\n got %s\nwant prefix %s", line, want)
	}
	var got Record
	if err := got.UnmarshalJSON(line); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("round trip: err %v\n got %+v\nwant %+v", err, got, r)
	}
}

// TestJSONRoundTripTurns: a multi-turn record carries its conversation and 1-based turn
// right after the index; bad turn fields are refused with a message naming them.
func TestJSONRoundTripTurns(t *testing.T) {
	r := sample()
	r.Conversation, r.Turn = 12, 3
	line := AppendJSON(nil, &r)
	if want := `{"level":1,"index":7,"conversation":12,"turn":3,"warmup":false,`; !bytes.HasPrefix(line, []byte(want)) {
		t.Errorf("json:\n got %s\nwant prefix %s", line, want)
	}
	var got Record
	if err := got.UnmarshalJSON(line); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	// Conversation 0, turn 1 is the first request of the first conversation: still written.
	r.Conversation, r.Turn = 0, 1
	if line := AppendJSON(nil, &r); !bytes.Contains(line, []byte(`"conversation":0,"turn":1,`)) {
		t.Errorf("first turn of conversation 0 not written: %s", line)
	}
	for in, want := range map[string]string{
		`{"level":0,"turn":-1,"sent_s":0,"scheduled_s":0,"done_s":0}`:                  "must not be negative",
		`{"level":0,"conversation":4,"sent_s":0,"scheduled_s":0,"done_s":0}`:           `without a "turn"`,
		`{"level":0,"conversation":-2,"turn":1,"sent_s":0,"scheduled_s":0,"done_s":0}`: "must not be negative",
	} {
		var x Record
		if err := x.UnmarshalJSON([]byte(in)); err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestJSONRoundTripConnectionFields(t *testing.T) {
	r := sample()
	r.Retried, r.TTFTUpperBound = true, true
	r.Phases = &Phases{Connect: 180 * time.Microsecond, Write: 12 * time.Microsecond, Headers: 3 * time.Millisecond,
		Has: PhaseConnect | PhaseWrite | PhaseHeaders}
	failed := sample()
	failed.Events = Events{}
	failed.Error = &Error{Kind: KindHTTPStatus, Status: 429, Message: "slow down", RetryAfter: 2 * time.Second}
	line := AppendJSON(nil, &r)
	for _, want := range []string{`"warmup":false,"retried":true,`, `"ttft_upper_bound":true,`,
		`"phases":{"connect_s":0.000180,"write_s":0.000012,"headers_s":0.003000}`} {
		if !bytes.Contains(line, []byte(want)) {
			t.Errorf("json %s lacks %s", line, want)
		}
	}
	fline := AppendJSON(nil, &failed)
	if want := `"error":{"kind":"http_status","status":429,"message":"slow down","retry_after_s":2.000000}`; !bytes.Contains(fline, []byte(want)) {
		t.Errorf("json %s lacks %s", fline, want)
	}
	for _, c := range []struct {
		line []byte
		want Record
	}{{line, r}, {fline, failed}} {
		var got Record
		if err := got.UnmarshalJSON(c.line); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, c.want)
		}
	}
	var bad Record
	if err := bad.UnmarshalJSON([]byte(`{"level":0,"sent_s":0,"scheduled_s":0,"done_s":0,"phases":{"dnss_s":0.1}}`)); err == nil ||
		!strings.Contains(err.Error(), `unknown phase "dnss_s"`) {
		t.Errorf("unknown phase: err %v", err)
	}
}

// EachGap gives the gaps Each's times imply, with the later event's token count.
func TestEventsEachGap(t *testing.T) {
	var e Events
	e.Base = 1500 * time.Nanosecond // not µs-aligned: gaps are whole µs all the same
	at := e.Base
	for i := range 50 {
		at += time.Duration(i*37%11) * time.Microsecond
		e.Append(at, 1+i%3/2)
	}
	var want, got [][2]int64
	var prev time.Duration
	e.Each(func(i int, t time.Duration, n int) {
		if i > 0 {
			want = append(want, [2]int64{int64(t/time.Microsecond - prev/time.Microsecond), int64(n)})
		}
		prev = t
	})
	e.EachGap(func(g int64, n int) { got = append(got, [2]int64{g, int64(n)}) })
	if !slices.Equal(got, want) || len(got) != 49 {
		t.Errorf("EachGap %v\nwant %v", got, want)
	}
}

func TestErrorHints(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string // substring; "" means no hint
	}{
		{Error{Kind: KindHTTPStatus, Status: 401, Message: "Invalid API Key"}, "--api-key"},
		{Error{Kind: KindHTTPStatus, Status: 404, Message: "The model `x` does not exist"}, "--model"},
		{Error{Kind: KindHTTPStatus, Status: 404, Message: "404 page not found"}, "--api"},
		{Error{Kind: KindHTTPStatus, Status: 501, Message: "Unsupported method"}, "--api"},
		{Error{Kind: KindHTTPStatus, Status: 429, Message: "slow down"}, "never re-sends"},
		{Error{Kind: KindHTTPStatus, Status: 400, Message: "exceeds the available context size"}, "--input-tokens"},
		{Error{Kind: KindHTTPStatus, Status: 500, Message: "boom"}, ""},
		{Error{Kind: KindConnect, Message: "dial tcp 127.0.0.1:1: connect: connection refused"}, "is the server up"},
		{Error{Kind: KindConnect, Message: "tls: failed to verify certificate"}, "--ca-cert"},
		{Error{Kind: KindTimeout}, "--timeout"},
		{Error{Kind: KindDisconnect, Message: "unexpected EOF"}, ""},
	} {
		h := c.e.Hint()
		if (c.want == "") != (h == "") || !strings.Contains(h, c.want) {
			t.Errorf("%+v: hint %q, want one containing %q", c.e, h, c.want)
		}
	}
}

func TestWriteFile(t *testing.T) {
	a, b := sample(), sample()
	b.Index = 8
	p := filepath.Join(t.TempDir(), "records.jsonl")
	if err := WriteFile(p, []Record{a, b}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadAll(f)
	if err != nil || len(got) != 2 || got[1].Index != 8 || !reflect.DeepEqual(got[0], a) {
		t.Errorf("read back %d records, %v", len(got), err)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir"), nil); err == nil {
		t.Error("WriteFile into a missing folder: no error")
	}
}

// The compact format (records.bin) holds every field records.jsonl does, and is read by
// Each as records.jsonl is, a cut last record included.
func TestCompactRoundTrip(t *testing.T) {
	rich := sample()
	rich.Warmup, rich.KernelStamps, rich.ReadLag, rich.Retried, rich.TTFTUpperBound = true, true, 1234*time.Microsecond, true, true
	rich.Conversation, rich.Turn, rich.FirstContent, rich.Repeat = 3, 2, 80*time.Millisecond, 4
	rich.Server = &ServerTimings{PromptTokens: 510, Prefill: 41250 * time.Microsecond, OutputTokens: 4, Total: 70 * time.Millisecond}
	rich.Phases = &Phases{DNS: 5 * time.Microsecond, Write: 12 * time.Microsecond, Headers: 3 * time.Millisecond,
		Has: PhaseDNS | PhaseWrite | PhaseHeaders}
	failed := sample()
	failed.Events = Events{}
	failed.Scheduled, failed.Sent = -time.Second, -time.Second+5*time.Microsecond // before the run's t = 0
	failed.Error = &Error{Kind: KindHTTPStatus, Status: 429, Message: "slow down ✓", RetryAfter: 2 * time.Second}
	failed.Repeat = 2
	never := Record{Level: 2, Index: 1 << 20, Error: &Error{Kind: KindConnect, Message: "refused"}}
	rich.Images, rich.ImageBytes = 2, 123456
	rich.ToolCallTokens, rich.FirstToolCall = 3, 77*time.Millisecond
	text := "héllo \"quoted\"\n\ttab \u2028 ✓"
	rich.Text = &text
	empty := ""
	failed.Text = &empty // --save-text on a request that generated nothing: "" kept, not dropped
	embed := Record{Level: 1, Index: 3, Sent: time.Millisecond, Done: 9 * time.Millisecond, Unstreamed: true, Inputs: 8, InputTokens: 256}
	rerank := Record{Level: 1, Index: 4, Sent: time.Millisecond, Done: 9 * time.Millisecond, Unstreamed: true, Documents: 8, InputTokens: 300}
	p := filepath.Join(t.TempDir(), FormatCompact.FileName())
	want := []Record{rich, failed, never, embed, rerank}
	if err := WriteFile(p, want); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(bytes.NewReader(b))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip (%v):\n got %+v\nwant %+v", err, got, want)
	}
	var jsonl []byte
	for i := range want {
		jsonl = append(AppendJSON(jsonl, &want[i]), '\n')
	}
	for i := range want {
		var back Record
		if err := back.UnmarshalJSON(AppendJSON(nil, &want[i])); err != nil || !reflect.DeepEqual(back, want[i]) {
			t.Errorf("JSONL round trip of record %d (%v):\n got %+v\nwant %+v", i, err, back, want[i])
		}
	}
	if len(b)*2 > len(jsonl) {
		t.Errorf("compact %d bytes, JSONL %d: want less than half", len(b), len(jsonl))
	}
	for cut := len(compactMagic) + 1; cut < len(b); cut++ {
		got, err := ReadAll(bytes.NewReader(b[:cut]))
		if !errors.Is(err, ErrTruncated) && err != nil {
			t.Fatalf("cut at %d: %v, want ErrTruncated", cut, err)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("cut at %d: record %d differs", cut, i)
			}
		}
	}
	v2 := slices.Clone(b)
	v2[len(compactMagic)-1] = 2
	if _, err := ReadAll(bytes.NewReader(v2)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a later version: %v", err)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	if _, err := Find(dir); err == nil || !strings.Contains(err.Error(), "not a run folder") {
		t.Errorf("empty folder: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "records.bin"), compactMagic, 0o644)
	if p, err := Find(dir); err != nil || FormatOf(p) != FormatCompact {
		t.Errorf("records.bin: %q %v", p, err)
	}
	os.WriteFile(filepath.Join(dir, "records.jsonl"), nil, 0o644)
	if _, err := Find(dir); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("both: %v", err)
	}
}

// TestJSONToolCall: a record whose answer called a tool says how many of its output tokens
// the call's were and when its first token came; records.jsonl refuses more tool-call tokens
// than output tokens, or a count without its arrival.
func TestJSONToolCall(t *testing.T) {
	r := sample()
	r.ToolCallTokens, r.FirstToolCall = 3, 62003*time.Microsecond
	b := AppendJSON(nil, &r)
	if !bytes.Contains(b, []byte(`"output_tokens_source":"usage","tool_call_tokens":3,"first_tool_call_s":0.062003,`)) {
		t.Errorf("json %s", b)
	}
	var got Record
	if err := got.UnmarshalJSON(b); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip (%v):\n got %+v\nwant %+v", err, got, r)
	}
	for in, want := range map[string]string{
		`"tool_call_tokens":9,"first_tool_call_s":0.062003`: "must be in 0..output_tokens (4)",
		`"tool_call_tokens":2`:                              `without "first_tool_call_s"`,
	} {
		line := bytes.Replace(AppendJSON(nil, &r), []byte(`"tool_call_tokens":3,"first_tool_call_s":0.062003`), []byte(in), 1)
		if err := got.UnmarshalJSON(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

// TestTaskFieldsRoundTrip: an agentic task's call carries its task, 1-based call, sub-agent,
// tool latency and final mark in both formats; bad task fields are refused by name.
func TestTaskFieldsRoundTrip(t *testing.T) {
	r := sample()
	r.Task, r.Call, r.Sub, r.ToolTime, r.FinalCall = 9, 3, 2, 1500*time.Millisecond, true
	line := AppendJSON(nil, &r)
	if want := `"task":9,"call":3,"sub":2,"tool_s":1.500000,"final_call":true,`; !bytes.Contains(line, []byte(want)) {
		t.Errorf("json:\n got %s\nwant within %s", line, want)
	}
	var got Record
	if err := got.UnmarshalJSON(line); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("json round trip: err %v\n got %+v\nwant %+v", err, got, r)
	}
	var dec Record
	if err := decodeCompact(AppendCompact(nil, &r)[1:], &dec); err != nil || !reflect.DeepEqual(dec, r) {
		t.Errorf("compact round trip: err %v\n got %+v\nwant %+v", err, dec, r)
	}
	for in, want := range map[string]string{
		`{"level":0,"task":-1,"call":1,"sent_s":0,"scheduled_s":0,"done_s":0}`: "must be in 0..",
		`{"level":0,"task":4,"sent_s":0,"scheduled_s":0,"done_s":0}`:           `without a "call"`,
	} {
		var x Record
		if err := x.UnmarshalJSON([]byte(in)); err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

// Records files written before the field was named cached_tokens carry it as
// cached_prompt_tokens: read either; both, only when they agree. A record without either
// says nothing of the server's cache (not 0).
func TestJSONCachedTokensNames(t *testing.T) {
	base := `{"level":0,"index":1,"scheduled_s":0.001000,"sent_s":0.001000,"done_s":0.002000,"input_tokens":64,"output_tokens":1,"output_tokens_source":"usage","events":[[0.001500,1]],"error":null`
	for _, c := range []struct {
		extra  string
		cached int32
		said   bool
		err    string
	}{
		{``, 0, false, ""},
		{`,"cached_tokens":0`, 0, true, ""},
		{`,"cached_tokens":48`, 48, true, ""},
		{`,"cached_prompt_tokens":48`, 48, true, ""},
		{`,"cached_tokens":48,"cached_prompt_tokens":48`, 48, true, ""},
		{`,"cached_tokens":48,"cached_prompt_tokens":32`, 0, false, "disagree"},
		{`,"cached_tokens":-1`, 0, false, "must not be negative"},
	} {
		var r Record
		err := r.UnmarshalJSON([]byte(base + c.extra + "}"))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.extra, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.extra, err)
		}
		if r.CachedPromptTokens != c.cached || r.HasCachedPromptTokens != c.said {
			t.Errorf("%s: cached %d (said %v), want %d (%v)", c.extra, r.CachedPromptTokens, r.HasCachedPromptTokens, c.cached, c.said)
		}
		if c.said && !strings.Contains(string(AppendJSON(nil, &r)), fmt.Sprintf(`,"cached_tokens":%d,`, c.cached)) {
			t.Errorf("%s: written as %s", c.extra, AppendJSON(nil, &r))
		}
	}
}

// TestEndpointAndStageRoundTrip: the endpoint a balanced run sent a request to, and the
// stage of a staged level it was scheduled in, survive both formats; a record of one
// endpoint and no stages writes neither; a negative one is refused.
func TestEndpointAndStageRoundTrip(t *testing.T) {
	for _, c := range []struct {
		key string
		set func(*Record, int16)
	}{
		{"endpoint", func(r *Record, v int16) { r.Endpoint = v }},
		{"stage", func(r *Record, v int16) { r.Stage = v }},
	} {
		r := sample()
		c.set(&r, 3)
		line := AppendJSON(nil, &r)
		if !bytes.Contains(line, []byte(`"`+c.key+`":3,`)) {
			t.Errorf("json %s lacks the %s", line, c.key)
		}
		var got Record
		if err := got.UnmarshalJSON(line); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("%s: json round trip: err %v\n got %+v\nwant %+v", c.key, err, got, r)
		}
		var dec Record
		if err := decodeCompact(AppendCompact(nil, &r)[1:], &dec); err != nil || !reflect.DeepEqual(dec, r) {
			t.Errorf("%s: compact round trip: err %v\n got %+v\nwant %+v", c.key, err, dec, r)
		}
		c.set(&r, 0)
		if line := AppendJSON(nil, &r); bytes.Contains(line, []byte(`"`+c.key+`"`)) {
			t.Errorf("%s 0 written: %s", c.key, line)
		}
		var x Record
		if err := x.UnmarshalJSON([]byte(`{"level":0,"` + c.key + `":-1,"sent_s":0,"scheduled_s":0,"done_s":0}`)); err == nil {
			t.Errorf("%s -1 accepted", c.key)
		}
	}
}
