package record

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AppendJSON appends r as one JSON object (no newline) in the records.jsonl schema.
// Hand-written rather than reflective: it runs once per request on the hot path of
// large runs, and it must print times as exact decimal seconds with µs precision.
func AppendJSON(b []byte, r *Record) []byte {
	b = append(b, `{"level":`...)
	b = strconv.AppendInt(b, int64(r.Level), 10)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(r.Index), 10)
	if r.Repeat > 0 {
		b = append(b, `,"repeat":`...)
		b = strconv.AppendInt(b, int64(r.Repeat), 10)
	}
	if r.Turn > 0 {
		b = append(b, `,"conversation":`...)
		b = strconv.AppendInt(b, int64(r.Conversation), 10)
		b = append(b, `,"turn":`...)
		b = strconv.AppendInt(b, int64(r.Turn), 10)
	}
	if r.Call > 0 {
		b = append(b, `,"task":`...)
		b = strconv.AppendInt(b, int64(r.Task), 10)
		b = append(b, `,"call":`...)
		b = strconv.AppendInt(b, int64(r.Call), 10)
		if r.Sub > 0 {
			b = append(b, `,"sub":`...)
			b = strconv.AppendInt(b, int64(r.Sub), 10)
		}
		b = append(b, `,"tool_s":`...)
		b = appendSeconds(b, r.ToolTime)
		if r.FinalCall {
			b = append(b, `,"final_call":true`...)
		}
	}
	if r.Endpoint > 0 {
		b = append(b, `,"endpoint":`...)
		b = strconv.AppendInt(b, int64(r.Endpoint), 10)
	}
	if r.Stage > 0 {
		b = append(b, `,"stage":`...)
		b = strconv.AppendInt(b, int64(r.Stage), 10)
	}
	b = append(b, `,"warmup":`...)
	b = strconv.AppendBool(b, r.Warmup)
	if r.Retried {
		b = append(b, `,"retried":true`...)
	}
	if r.Unstreamed {
		b = append(b, `,"unstreamed":true`...)
	}
	if r.Inputs > 0 {
		b = append(b, `,"inputs":`...)
		b = strconv.AppendInt(b, int64(r.Inputs), 10)
	}
	if r.Documents > 0 {
		b = append(b, `,"documents":`...)
		b = strconv.AppendInt(b, int64(r.Documents), 10)
	}
	if r.Images > 0 {
		b = append(b, `,"images":`...)
		b = strconv.AppendInt(b, int64(r.Images), 10)
		b = append(b, `,"image_bytes":`...)
		b = strconv.AppendInt(b, int64(r.ImageBytes), 10)
	}
	b = append(b, `,"scheduled_s":`...)
	b = appendSeconds(b, r.Scheduled)
	b = append(b, `,"sent_s":`...)
	b = appendSeconds(b, r.Sent)
	b = append(b, `,"first_token_s":`...)
	if t, ok := r.FirstToken(); ok {
		b = appendSeconds(b, t)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"last_token_s":`...)
	if t, ok := r.LastToken(); ok {
		b = appendSeconds(b, t)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"done_s":`...)
	b = appendSeconds(b, r.Done)
	b = append(b, `,"response_id":`...)
	b = appendString(b, r.ResponseID)
	b = append(b, `,"input_tokens":`...)
	b = strconv.AppendInt(b, int64(r.InputTokens), 10)
	if r.ServerPromptTokens > 0 {
		b = append(b, `,"server_prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(r.ServerPromptTokens), 10)
	}
	if r.HasCachedPromptTokens {
		b = append(b, `,"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(r.CachedPromptTokens), 10)
	}
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.OutputTokens), 10)
	b = append(b, `,"output_tokens_source":`...)
	b = appendString(b, r.OutputTokensSource)
	if r.ToolCallTokens > 0 {
		b = append(b, `,"tool_call_tokens":`...)
		b = strconv.AppendInt(b, int64(r.ToolCallTokens), 10)
		b = append(b, `,"first_tool_call_s":`...)
		b = appendSeconds(b, r.FirstToolCall)
	}
	b = append(b, `,"events":[`...)
	r.Events.Each(func(i int, t time.Duration, n int) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendSeconds(b, t)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ']')
	})
	b = append(b, ']')
	if r.FirstContent != 0 {
		b = append(b, `,"first_content_s":`...)
		b = appendSeconds(b, r.FirstContent)
	}
	if r.TTFTUpperBound {
		b = append(b, `,"ttft_upper_bound":true`...)
	}
	if r.KernelStamps {
		b = append(b, `,"read_lag_s":`...)
		b = appendSeconds(b, r.ReadLag)
	}
	if p := r.Phases; p != nil && p.Has != 0 {
		b = append(b, `,"phases":{`...)
		n := 0
		for _, f := range phaseFields(p) {
			if p.Has&f.bit == 0 {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, '"')
			b = append(b, f.key...)
			b = append(b, `":`...)
			b = appendSeconds(b, *f.d)
		}
		b = append(b, '}')
	}
	if st := r.Server; st != nil {
		b = append(b, `,"server":{`...)
		n := 0
		field := func(key string) {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, '"')
			b = append(b, key...)
			b = append(b, `":`...)
		}
		if st.PromptTokens != 0 {
			field("prompt_tokens")
			b = strconv.AppendInt(b, int64(st.PromptTokens), 10)
		}
		if st.Prefill != 0 {
			field("prefill_s")
			b = appendSeconds(b, st.Prefill)
		}
		if st.OutputTokens != 0 {
			field("output_tokens")
			b = strconv.AppendInt(b, int64(st.OutputTokens), 10)
		}
		if st.Decode != 0 {
			field("decode_s")
			b = appendSeconds(b, st.Decode)
		}
		if st.Queue != 0 {
			field("queue_s")
			b = appendSeconds(b, st.Queue)
		}
		if st.Total != 0 {
			field("total_s")
			b = appendSeconds(b, st.Total)
		}
		b = append(b, '}')
	}
	b = append(b, `,"error":`...)
	if r.Error == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"kind":`...)
		b = appendString(b, r.Error.Kind)
		if r.Error.Status != 0 {
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(r.Error.Status), 10)
		}
		if r.Error.Message != "" {
			b = append(b, `,"message":`...)
			b = appendString(b, r.Error.Message)
		}
		if r.Error.RetryAfter > 0 {
			b = append(b, `,"retry_after_s":`...)
			b = appendSeconds(b, r.Error.RetryAfter)
		}
		b = append(b, '}')
	}
	if r.Text != nil {
		b = append(b, `,"text":`...)
		b = appendString(b, *r.Text)
	}
	return append(b, '}')
}

// appendSeconds writes d as decimal seconds with exactly six fractional digits.
func appendSeconds(b []byte, d time.Duration) []byte {
	us := int64(d / time.Microsecond)
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1e6, 10)
	b = append(b, '.')
	frac := us % 1e6
	for div := int64(1e5); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // cannot fail for a string
	return append(b, q...)
}

// parseSeconds reads a JSON number of seconds back to an exact µs duration.
func parseSeconds(n json.Number) (time.Duration, error) {
	if strings.ContainsAny(string(n), "eE") { // not what we write, but valid JSON
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.Abs(f) > math.MaxInt64/1e9 {
			return 0, fmt.Errorf("bad seconds %q", n)
		}
		return time.Duration(f * 1e6 * float64(time.Microsecond)).Round(time.Microsecond), nil
	}
	us, err := ParseMicros(string(n))
	if err != nil {
		return 0, err
	}
	if us > math.MaxInt64/1000 || us < math.MinInt64/1000 {
		return 0, fmt.Errorf("seconds %q out of range", n)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// ParseMicros reads decimal seconds ("1712345678.123456", "-0.5") as exact microseconds,
// without a detour through float64; digits past the sixth decimal are truncated.
func ParseMicros(s string) (int64, error) {
	orig := s
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	ip, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(ip, 10, 64)
	if err != nil || len(ip) == 0 || ip[0] == '+' || sec > math.MaxInt64/1_000_000 {
		return 0, fmt.Errorf("%q is not decimal seconds", orig)
	}
	var us int64
	for i, c := range []byte(frac) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not decimal seconds", orig)
		}
		if i < 6 {
			us = us*10 + int64(c-'0')
		}
	}
	for i := len(frac); i < 6; i++ {
		us *= 10
	}
	v := sec*1_000_000 + us
	if neg {
		v = -v
	}
	return v, nil
}

// phaseField names one phase in records.jsonl.
type phaseField struct {
	key string
	bit PhaseSet
	d   *time.Duration
}

func phaseFields(p *Phases) [5]phaseField {
	return [5]phaseField{
		{"dns_s", PhaseDNS, &p.DNS}, {"connect_s", PhaseConnect, &p.Connect}, {"tls_s", PhaseTLS, &p.TLS},
		{"write_s", PhaseWrite, &p.Write}, {"headers_s", PhaseHeaders, &p.Headers},
	}
}

type jsonRecord struct {
	Level              *int                   `json:"level"`
	Index              int                    `json:"index"`
	Repeat             int32                  `json:"repeat"`
	Conversation       int                    `json:"conversation"`
	Turn               int                    `json:"turn"`
	Task               int                    `json:"task"`
	Call               int                    `json:"call"`
	Sub                int                    `json:"sub"`
	ToolTime           *json.Number           `json:"tool_s"`
	FinalCall          bool                   `json:"final_call"`
	Endpoint           int                    `json:"endpoint"`
	Stage              int                    `json:"stage"`
	Warmup             bool                   `json:"warmup"`
	Retried            bool                   `json:"retried"`
	Unstreamed         bool                   `json:"unstreamed"`
	Inputs             int32                  `json:"inputs"`
	Documents          int32                  `json:"documents"`
	Images             int32                  `json:"images"`
	ImageBytes         int32                  `json:"image_bytes"`
	Text               *string                `json:"text"`
	TTFTUpperBound     bool                   `json:"ttft_upper_bound"`
	Phases             map[string]json.Number `json:"phases"`
	Scheduled          json.Number            `json:"scheduled_s"`
	Sent               json.Number            `json:"sent_s"`
	FirstToken         *json.Number           `json:"first_token_s"`
	LastToken          *json.Number           `json:"last_token_s"`
	Done               json.Number            `json:"done_s"`
	ResponseID         string                 `json:"response_id"`
	InputTokens        int                    `json:"input_tokens"`
	ServerPromptTokens int                    `json:"server_prompt_tokens"`
	CachedTokens       *int                   `json:"cached_tokens"`
	OldCachedTokens    *int                   `json:"cached_prompt_tokens"` // the name before cached_tokens
	OutputTokens       int                    `json:"output_tokens"`
	OutputTokensSource string                 `json:"output_tokens_source"`
	ToolCallTokens     int                    `json:"tool_call_tokens"`
	FirstToolCall      *json.Number           `json:"first_tool_call_s"`
	Events             [][2]json.Number       `json:"events"`
	FirstContent       *json.Number           `json:"first_content_s"`
	ReadLag            *json.Number           `json:"read_lag_s"`
	Server             *jsonServer            `json:"server"`
	Error              *jsonError             `json:"error"`
}

type jsonError struct {
	Kind       string       `json:"kind"`
	Status     int          `json:"status"`
	Message    string       `json:"message"`
	RetryAfter *json.Number `json:"retry_after_s"`
}

type jsonServer struct {
	PromptTokens int          `json:"prompt_tokens"`
	Prefill      *json.Number `json:"prefill_s"`
	OutputTokens int          `json:"output_tokens"`
	Decode       *json.Number `json:"decode_s"`
	Queue        *json.Number `json:"queue_s"`
	Total        *json.Number `json:"total_s"`
}

// UnmarshalJSON decodes one records.jsonl line.
func (r *Record) UnmarshalJSON(data []byte) error {
	var j jsonRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	if j.Level == nil {
		return errors.New(`missing "level"`)
	}
	if j.Repeat < 0 {
		return fmt.Errorf("repeat %d: must not be negative", j.Repeat)
	}
	if j.Turn < 0 || j.Conversation < 0 {
		return fmt.Errorf("conversation %d turn %d: must not be negative", j.Conversation, j.Turn)
	}
	if j.Turn == 0 && j.Conversation != 0 {
		return fmt.Errorf(`conversation %d without a "turn" (turns start at 1)`, j.Conversation)
	}
	if j.Task < 0 || j.Call < 0 || j.Sub < 0 || j.Task > math.MaxInt32 || j.Call > math.MaxInt16 || j.Sub > math.MaxInt16 {
		return fmt.Errorf("task %d call %d sub %d: must be in 0..2147483647, 0..32767 and 0..32767", j.Task, j.Call, j.Sub)
	}
	if j.Call == 0 && (j.Task != 0 || j.Sub != 0 || j.ToolTime != nil || j.FinalCall) {
		return errors.New(`task fields without a "call" (calls start at 1)`)
	}
	if j.Endpoint < 0 || j.Endpoint > math.MaxInt16 {
		return fmt.Errorf("endpoint %d: must be in 1..32767 (or absent)", j.Endpoint)
	}
	if j.Stage < 0 || j.Stage > math.MaxInt16 {
		return fmt.Errorf("stage %d: must be in 1..32767 (or absent)", j.Stage)
	}
	var err error
	*r = Record{
		Task: int32(j.Task), Call: int16(j.Call), Sub: int16(j.Sub), FinalCall: j.FinalCall, Endpoint: int16(j.Endpoint), Stage: int16(j.Stage),
		Level: *j.Level, Index: j.Index, Repeat: j.Repeat, Conversation: j.Conversation, Turn: j.Turn, Warmup: j.Warmup, ResponseID: j.ResponseID,
		InputTokens: j.InputTokens, ServerPromptTokens: j.ServerPromptTokens,
		OutputTokens: j.OutputTokens, OutputTokensSource: j.OutputTokensSource,
		Retried: j.Retried, TTFTUpperBound: j.TTFTUpperBound,
		Unstreamed: j.Unstreamed, Inputs: j.Inputs, Documents: j.Documents, Images: j.Images, ImageBytes: j.ImageBytes,
		Text: j.Text,
	}
	if j.CachedTokens != nil && j.OldCachedTokens != nil && *j.CachedTokens != *j.OldCachedTokens {
		return fmt.Errorf("cached_tokens %d and cached_prompt_tokens %d disagree (cached_prompt_tokens is cached_tokens' old name: keep one)",
			*j.CachedTokens, *j.OldCachedTokens)
	}
	if c := cmp.Or(j.CachedTokens, j.OldCachedTokens); c != nil {
		if *c < 0 {
			return fmt.Errorf("cached_tokens %d: must not be negative", *c)
		}
		r.CachedPromptTokens, r.HasCachedPromptTokens = int32(min(*c, math.MaxInt32)), true
	}
	if j.Inputs < 0 || j.Documents < 0 || j.Images < 0 || j.ImageBytes < 0 {
		return fmt.Errorf("inputs %d, documents %d, images %d (%d bytes): must not be negative", j.Inputs, j.Documents, j.Images, j.ImageBytes)
	}
	if je := j.Error; je != nil {
		r.Error = &Error{Kind: je.Kind, Status: je.Status, Message: je.Message}
		if je.RetryAfter != nil {
			var err error
			if r.Error.RetryAfter, err = parseSeconds(*je.RetryAfter); err != nil {
				return fmt.Errorf("error.retry_after_s: %w", err)
			}
		}
	}
	if len(j.Phases) > 0 {
		p := &Phases{}
		fields := phaseFields(p)
		for k, v := range j.Phases {
			i := slices.IndexFunc(fields[:], func(f phaseField) bool { return f.key == k })
			if i < 0 {
				return fmt.Errorf("phases: unknown phase %q", k)
			}
			d, err := parseSeconds(v)
			if err != nil {
				return fmt.Errorf("phases.%s: %w", k, err)
			}
			*fields[i].d = d
			p.Has |= fields[i].bit
		}
		r.Phases = p
	}
	for _, f := range []struct {
		dst  *time.Duration
		src  json.Number
		name string
	}{{&r.Scheduled, j.Scheduled, "scheduled_s"}, {&r.Sent, j.Sent, "sent_s"}, {&r.Done, j.Done, "done_s"}} {
		if *f.dst, err = parseSeconds(f.src); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if len(j.Events) > 0 {
		r.Events.Base = r.Sent
	}
	if j.ToolTime != nil {
		if r.ToolTime, err = parseSeconds(*j.ToolTime); err != nil {
			return fmt.Errorf("tool_s: %w", err)
		}
	}
	if j.FirstContent != nil {
		if r.FirstContent, err = parseSeconds(*j.FirstContent); err != nil {
			return fmt.Errorf("first_content_s: %w", err)
		}
	}
	if j.ToolCallTokens < 0 || j.ToolCallTokens > j.OutputTokens {
		return fmt.Errorf("tool_call_tokens %d: must be in 0..output_tokens (%d)", j.ToolCallTokens, j.OutputTokens)
	}
	if j.ToolCallTokens > 0 {
		if j.FirstToolCall == nil {
			return errors.New(`tool_call_tokens without "first_tool_call_s"`)
		}
		r.ToolCallTokens = int32(min(j.ToolCallTokens, math.MaxInt32))
		if r.FirstToolCall, err = parseSeconds(*j.FirstToolCall); err != nil {
			return fmt.Errorf("first_tool_call_s: %w", err)
		}
	}
	if j.ReadLag != nil {
		r.KernelStamps = true
		if r.ReadLag, err = parseSeconds(*j.ReadLag); err != nil {
			return fmt.Errorf("read_lag_s: %w", err)
		}
	}
	if js := j.Server; js != nil {
		st := &ServerTimings{PromptTokens: js.PromptTokens, OutputTokens: js.OutputTokens}
		for _, f := range []struct {
			dst  *time.Duration
			src  *json.Number
			name string
		}{{&st.Prefill, js.Prefill, "prefill_s"}, {&st.Decode, js.Decode, "decode_s"}, {&st.Queue, js.Queue, "queue_s"}, {&st.Total, js.Total, "total_s"}} {
			if f.src == nil {
				continue
			}
			if *f.dst, err = parseSeconds(*f.src); err != nil {
				return fmt.Errorf("server.%s: %w", f.name, err)
			}
		}
		r.Server = st
	}
	for i, ev := range j.Events {
		t, err := parseSeconds(ev[0])
		if err != nil {
			return fmt.Errorf("events[%d]: %w", i, err)
		}
		n, err := strconv.Atoi(string(ev[1]))
		if err != nil || n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("events[%d]: token count %q is not a positive integer below 2^31", i, ev[1])
		}
		r.Events.Append(t, n)
	}
	return nil
}

// MarshalJSON encodes r in the records.jsonl schema.
func (r Record) MarshalJSON() ([]byte, error) { return AppendJSON(nil, &r), nil }

// ErrTruncated marks a records.jsonl whose last line was cut short, unterminated and
// undecodable: the writer was killed mid-line. Each returns it (wrapped, naming the line)
// after handing every complete record to f, so a reader may take the run as it stands.
var ErrTruncated = errors.New("the last record is truncated (the writer was killed mid-write) and was ignored")

// Each decodes a records.jsonl stream one record at a time, so a huge run never sits in
// memory as JSON; f's record is only valid during the call unless copied. Errors name the
// line. A truncated last line (a killed writer) is skipped: Each returns ErrTruncated,
// wrapped with its line number, after the records before it were handed to f; any other
// undecodable line, even a newline-terminated last one, is an error. An error from f
// stops the reading and is returned.
//
// A records.bin stream (the compact format, compact.go) is recognised by its first bytes
// and read the same way: a cut last record is ErrTruncated too.
func Each(rd io.Reader, f func(*Record) error) error {
	br := bufio.NewReaderSize(rd, 1<<16)
	if compact, err := isCompact(br); err != nil {
		return err
	} else if compact {
		return eachCompact(br, f)
	}
	var pending error // a bad line is fatal only when another line follows it
	line := 0
	for {
		b, err := readLine(br)
		if len(b) > 0 || err == nil {
			line++
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			if pending != nil {
				return pending
			}
			var r Record
			if derr := r.UnmarshalJSON(t); derr != nil {
				if errors.Is(err, io.EOF) && b[len(b)-1] != '\n' {
					return fmt.Errorf("line %d: %w", line, ErrTruncated)
				}
				pending = fmt.Errorf("line %d: %w", line, derr)
			} else if ferr := f(&r); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return pending
		}
	}
}

// EachInFile is Each over the records file at path (records.jsonl or records.bin, as
// Find names it), one record at a time so that a huge run never sits in memory; its
// errors name the file.
func EachInFile(path string, f func(*Record) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	if err := Each(fh, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readLine returns the next line including its '\n' (absent on the last line), of any length.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
	}
	return buf, err
}

// ReadAll decodes a whole records.jsonl stream; on an error it returns the records before it.
func ReadAll(rd io.Reader) ([]Record, error) {
	var out []Record
	err := Each(rd, func(r *Record) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}
