package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// The compact records format (records.bin): the same records as records.jsonl, in about
// a fifteenth of the bytes and a fraction of the time, for runs of millions of requests
// (simulate writes it by default). docs/metrics.md documents it; version 1 is:
//
//	file    = magic frame*
//	magic   = "llmbench-records" 0x00 0x01         (18 bytes: name, NUL, version)
//	frame   = uvarint(len(payload)) payload        (a cut last frame: a killed writer)
//	payload = uvarint(flags) uvarint(level) uvarint(index)
//	          [uvarint(conversation) uvarint(turn)]          flags&hasTurn
//	          varint(scheduled) varint(sent-scheduled) varint(done-sent)   (µs)
//	          string(response_id) uvarint(input_tokens) uvarint(server_prompt_tokens)
//	          uvarint(output_tokens) string(output_tokens_source)
//	          uvarint(events) [uvarint(first delta) varint(delta - previous delta)...]
//	          uvarint(multi) [uvarint(index - previous index) uvarint(tokens)...]
//	          [varint(first_content - sent)]                 flags&hasFirstContent
//	          [uvarint(read_lag)]                            flags&kernelStamps
//	          [uvarint(mask) uvarint(field)...]              flags&hasServer: prompt_tokens,
//	                                                         prefill, output_tokens, decode, queue, total
//	          [uvarint(phase set) uvarint(phase)...]         flags&hasPhases, in PhaseSet order
//	          [string(kind) uvarint(status) string(message) uvarint(retry_after)]  flags&hasError
//	          [uvarint(inputs) uvarint(documents)]           flags&hasInputs
//	          [uvarint(images) uvarint(image bytes)]         flags&hasImages
//	          [uvarint(repeat)]                              flags&hasRepeat (--repeat)
//	          [string(text)]                                 flags&hasText (--save-text)
//	          [uvarint(cached_tokens)]                       flags&hasCachedPrompt
//	          [uvarint(tool_call_tokens) varint(first_tool_call - sent)]  flags&hasToolCall
//	          [uvarint(task) uvarint(call) uvarint(sub) uvarint(tool µs) uvarint(final)]  flags&hasTask
//	          [uvarint(endpoint)]                            flags&hasEndpoint (several --url)
//	          [uvarint(stage)]                               flags&hasStage (--stages)
//	string  = uvarint(len) bytes
//
// flags&unstreamed marks a response that came as one document (Record.Unstreamed).
//
// Event times are µs deltas, each event's from the one before (the first's from sent), and
// each stored as its difference from the previous delta: a steady stream's deltas are
// nearly equal, so most events take one byte.

// Format is how a run's records are stored.
type Format string

// The record formats.
const (
	FormatJSONL   Format = "jsonl"   // records.jsonl: one JSON object per line
	FormatCompact Format = "compact" // records.bin: the compact binary format above
)

// Formats lists the formats, for flags.
func Formats() []Format { return []Format{FormatJSONL, FormatCompact} }

// FileName is the name of a run's records file in format f.
func (f Format) FileName() string {
	if f == FormatCompact {
		return "records.bin"
	}
	return "records.jsonl"
}

// FormatOf is the format of a records file, by its name.
func FormatOf(path string) Format {
	if filepath.Ext(path) == ".bin" {
		return FormatCompact
	}
	return FormatJSONL
}

// Find returns the records file of the run in dir: records.jsonl or records.bin.
func Find(dir string) (string, error) {
	var found []string
	for _, f := range Formats() {
		p := filepath.Join(dir, f.FileName())
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%s holds no records.jsonl or records.bin: not a run folder", dir)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%s holds both records.jsonl and records.bin: remove the one that is not this run's", dir)
}

// compactMagic starts every records.bin.
var compactMagic = []byte("llmbench-records\x00\x01")

const (
	cfWarmup = 1 << iota
	cfKernel
	cfRetried
	cfUpperBound
	cfTurn
	cfFirstContent
	cfServer
	cfPhases
	cfError
	cfUnstreamed
	cfInputs
	cfImages
	cfRepeat
	cfText
	cfCachedPrompt
	cfToolCall
	cfTask
	cfEndpoint
	cfStage
)

// AppendCompact appends r as one frame of the compact format.
func AppendCompact(b []byte, r *Record) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0) // room for the frame length, moved into place below
	p := len(b)
	var flags uint64
	set := func(bit uint64, on bool) {
		if on {
			flags |= bit
		}
	}
	set(cfWarmup, r.Warmup)
	set(cfKernel, r.KernelStamps)
	set(cfRetried, r.Retried)
	set(cfUpperBound, r.TTFTUpperBound)
	set(cfTurn, r.Turn > 0)
	set(cfFirstContent, r.FirstContent != 0)
	set(cfServer, r.Server != nil)
	set(cfPhases, r.Phases != nil && r.Phases.Has != 0)
	set(cfError, r.Error != nil)
	set(cfUnstreamed, r.Unstreamed)
	set(cfInputs, r.Inputs > 0 || r.Documents > 0)
	set(cfImages, r.Images > 0 || r.ImageBytes > 0)
	set(cfRepeat, r.Repeat > 0)
	set(cfText, r.Text != nil)
	set(cfCachedPrompt, r.HasCachedPromptTokens)
	set(cfToolCall, r.ToolCallTokens > 0)
	set(cfTask, r.Call > 0)
	set(cfEndpoint, r.Endpoint > 0)
	set(cfStage, r.Stage > 0)
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(r.Level))
	b = binary.AppendUvarint(b, uint64(r.Index))
	if r.Turn > 0 {
		b = binary.AppendUvarint(b, uint64(r.Conversation))
		b = binary.AppendUvarint(b, uint64(r.Turn))
	}
	b = binary.AppendVarint(b, us(r.Scheduled))
	b = binary.AppendVarint(b, us(r.Sent)-us(r.Scheduled))
	b = binary.AppendVarint(b, us(r.Done)-us(r.Sent))
	b = appendBytes(b, r.ResponseID)
	b = binary.AppendUvarint(b, uint64(r.InputTokens))
	b = binary.AppendUvarint(b, uint64(r.ServerPromptTokens))
	b = binary.AppendUvarint(b, uint64(r.OutputTokens))
	b = appendBytes(b, r.OutputTokensSource)
	e := &r.Events
	// Events are based at Sent when there are any (Base is set before the first Append).
	b = binary.AppendUvarint(b, uint64(len(e.deltas)))
	prev := int64(0)
	for i, d := range e.deltas {
		if i == 0 {
			// From Sent, which may differ from Base by less than a µs (both truncated).
			b = binary.AppendVarint(b, us(e.Base)+int64(d)-us(r.Sent))
		} else {
			b = binary.AppendVarint(b, int64(d)-prev)
		}
		prev = int64(d)
	}
	b = binary.AppendUvarint(b, uint64(len(e.multi)))
	last := uint32(0)
	for _, m := range e.multi {
		b = binary.AppendUvarint(b, uint64(m.idx-last))
		b = binary.AppendUvarint(b, uint64(m.n))
		last = m.idx
	}
	if r.FirstContent != 0 {
		b = binary.AppendVarint(b, us(r.FirstContent)-us(r.Sent))
	}
	if r.KernelStamps {
		b = binary.AppendUvarint(b, uint64(max(us(r.ReadLag), 0)))
	}
	if st := r.Server; st != nil {
		vals := serverFields(st)
		var mask uint64
		for i, v := range vals {
			if v != 0 {
				mask |= 1 << i
			}
		}
		b = binary.AppendUvarint(b, mask)
		for _, v := range vals {
			if v != 0 {
				b = binary.AppendVarint(b, v)
			}
		}
	}
	if ph := r.Phases; ph != nil && ph.Has != 0 {
		b = binary.AppendUvarint(b, uint64(ph.Has))
		for _, f := range phaseFields(ph) {
			if ph.Has&f.bit != 0 {
				b = binary.AppendUvarint(b, uint64(max(us(*f.d), 0)))
			}
		}
	}
	if er := r.Error; er != nil {
		b = appendBytes(b, er.Kind)
		b = binary.AppendUvarint(b, uint64(max(er.Status, 0)))
		b = appendBytes(b, er.Message)
		b = binary.AppendUvarint(b, uint64(max(us(er.RetryAfter), 0)))
	}
	if r.Inputs > 0 || r.Documents > 0 {
		b = binary.AppendUvarint(b, uint64(max(r.Inputs, 0)))
		b = binary.AppendUvarint(b, uint64(max(r.Documents, 0)))
	}
	if r.Images > 0 || r.ImageBytes > 0 { // as the flag: what was decoded is written back
		b = binary.AppendUvarint(b, uint64(max(r.Images, 0)))
		b = binary.AppendUvarint(b, uint64(max(r.ImageBytes, 0)))
	}
	if r.Repeat > 0 {
		b = binary.AppendUvarint(b, uint64(r.Repeat))
	}
	if r.Text != nil {
		b = appendBytes(b, *r.Text)
	}
	if r.HasCachedPromptTokens {
		b = binary.AppendUvarint(b, uint64(max(r.CachedPromptTokens, 0)))
	}
	if r.ToolCallTokens > 0 {
		b = binary.AppendUvarint(b, uint64(r.ToolCallTokens))
		b = binary.AppendVarint(b, us(r.FirstToolCall)-us(r.Sent))
	}
	if r.Call > 0 {
		b = binary.AppendUvarint(b, uint64(r.Task))
		b = binary.AppendUvarint(b, uint64(r.Call))
		b = binary.AppendUvarint(b, uint64(r.Sub))
		b = binary.AppendUvarint(b, uint64(max(us(r.ToolTime), 0)))
		final := uint64(0)
		if r.FinalCall {
			final = 1
		}
		b = binary.AppendUvarint(b, final)
	}
	if r.Endpoint > 0 {
		b = binary.AppendUvarint(b, uint64(r.Endpoint))
	}
	if r.Stage > 0 {
		b = binary.AppendUvarint(b, uint64(r.Stage))
	}
	// The frame length goes in front, in as many bytes as it needs.
	var lb [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(lb[:], uint64(len(b)-p))
	copy(b[start+5-ln:], lb[:ln])
	return append(b[:start], b[start+5-ln:]...)
}

// serverFields are a ServerTimings' fields in format order (counts, and durations in µs).
func serverFields(st *ServerTimings) [6]int64 {
	return [6]int64{int64(st.PromptTokens), us(st.Prefill), int64(st.OutputTokens), us(st.Decode), us(st.Queue), us(st.Total)}
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// compactReader decodes one payload.
type compactReader struct {
	b   []byte
	err error
}

func (c *compactReader) uvarint() uint64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.err = errors.New("bad varint")
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *compactReader) varint() int64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Varint(c.b)
	if n <= 0 {
		c.err = errors.New("bad varint")
		return 0
	}
	c.b = c.b[n:]
	return v
}

// int reads a non-negative count that must fit an int32 (as records.jsonl's do).
func (c *compactReader) int(what string) int {
	v := c.uvarint()
	if v > math.MaxInt32 {
		c.fail("%s %d out of range", what, v)
		return 0
	}
	return int(v)
}

func (c *compactReader) micros(v int64) time.Duration {
	if v > math.MaxInt64/int64(time.Microsecond) || v < math.MinInt64/int64(time.Microsecond) {
		c.fail("time %d µs out of range", v)
		return 0
	}
	return time.Duration(v) * time.Microsecond
}

func (c *compactReader) str() string {
	n := c.uvarint()
	if c.err != nil {
		return ""
	}
	if n > uint64(len(c.b)) {
		c.err = errors.New("string past the end of the record")
		return ""
	}
	s := string(c.b[:n])
	c.b = c.b[n:]
	return s
}

func (c *compactReader) fail(format string, a ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, a...)
	}
}

// decodeCompact decodes one payload into r.
func decodeCompact(p []byte, r *Record) error {
	c := &compactReader{b: p}
	flags := c.uvarint()
	*r = Record{Level: c.int("level"), Index: c.int("index")}
	r.Warmup, r.KernelStamps = flags&cfWarmup != 0, flags&cfKernel != 0
	r.Retried, r.TTFTUpperBound = flags&cfRetried != 0, flags&cfUpperBound != 0
	if flags&cfTurn != 0 {
		r.Conversation, r.Turn = c.int("conversation"), c.int("turn")
		if r.Turn == 0 {
			c.fail("turn 0 with the turn flag set")
		}
	}
	sched := c.varint()
	sent := sched + c.varint()
	done := sent + c.varint()
	r.Scheduled, r.Sent, r.Done = c.micros(sched), c.micros(sent), c.micros(done)
	r.ResponseID = c.str()
	r.InputTokens, r.ServerPromptTokens, r.OutputTokens = c.int("input tokens"), c.int("server prompt tokens"), c.int("output tokens")
	r.OutputTokensSource = c.str()
	n := c.uvarint()
	if c.err == nil && n > uint64(len(c.b)) { // every event takes a byte at least
		c.fail("%d events in a record of %d bytes", n, len(p))
	}
	if n > 0 && c.err == nil {
		r.Events.Base = r.Sent
		r.Events.deltas = make([]uint32, 0, n)
		var d int64
		for i := uint64(0); i < n && c.err == nil; i++ {
			if i == 0 {
				d = c.varint()
			} else {
				d += c.varint()
			}
			if d < 0 || d > math.MaxUint32 {
				c.fail("event %d: delta %d µs out of range", i, d)
				break
			}
			r.Events.deltas = append(r.Events.deltas, uint32(d))
			r.Events.last += time.Duration(d) * time.Microsecond
		}
		r.Events.last += r.Events.Base
		r.Events.total = len(r.Events.deltas)
	}
	nm := c.uvarint()
	if c.err == nil && nm > n {
		c.fail("%d multi-token events of %d", nm, n)
	}
	idx := uint64(0)
	for i := uint64(0); i < nm && c.err == nil; i++ {
		step := c.uvarint()
		if i > 0 && step == 0 {
			c.fail("multi-token events out of order")
		}
		idx += step
		tok := c.uvarint()
		if idx >= n || tok < 2 || tok > math.MaxInt32 {
			c.fail("multi-token event %d carries %d tokens", idx, tok)
			break
		}
		r.Events.multi = append(r.Events.multi, multiCount{idx: uint32(idx), n: uint32(tok)})
		r.Events.total += int(tok) - 1
	}
	if flags&cfFirstContent != 0 {
		r.FirstContent = c.micros(sent + c.varint())
	}
	if flags&cfKernel != 0 {
		r.ReadLag = c.micros(int64(min(c.uvarint(), math.MaxInt64)))
	}
	if flags&cfServer != 0 {
		mask := c.uvarint()
		var vals [6]int64
		for i := range vals {
			if mask&(1<<i) != 0 {
				vals[i] = c.varint()
			}
		}
		r.Server = &ServerTimings{PromptTokens: int(vals[0]), Prefill: c.micros(vals[1]), OutputTokens: int(vals[2]),
			Decode: c.micros(vals[3]), Queue: c.micros(vals[4]), Total: c.micros(vals[5])}
	}
	if flags&cfPhases != 0 {
		ph := &Phases{Has: PhaseSet(c.uvarint())}
		for _, f := range phaseFields(ph) {
			if ph.Has&f.bit != 0 {
				*f.d = c.micros(int64(min(c.uvarint(), math.MaxInt64)))
			}
		}
		if ph.Has != 0 { // an empty set is no phases, as the encoder writes them
			r.Phases = ph
		}
	}
	if flags&cfError != 0 {
		r.Error = &Error{Kind: c.str(), Status: c.int("status"), Message: c.str()}
		r.Error.RetryAfter = c.micros(int64(min(c.uvarint(), math.MaxInt64)))
	}
	r.Unstreamed = flags&cfUnstreamed != 0
	if flags&cfInputs != 0 {
		r.Inputs, r.Documents = int32(c.int("inputs")), int32(c.int("documents"))
	}
	if flags&cfImages != 0 {
		r.Images, r.ImageBytes = int32(c.int("images")), int32(c.int("image bytes"))
	}
	if flags&cfRepeat != 0 {
		r.Repeat = int32(c.int("repeat"))
	}
	if flags&cfText != 0 {
		t := c.str()
		r.Text = &t
	}
	if flags&cfCachedPrompt != 0 {
		r.CachedPromptTokens, r.HasCachedPromptTokens = int32(c.int("cached prompt tokens")), true
	}
	if flags&cfToolCall != 0 {
		r.ToolCallTokens = int32(min(c.int("tool call tokens"), math.MaxInt32))
		r.FirstToolCall = c.micros(sent + c.varint())
	}
	if flags&cfTask != 0 {
		r.Task, r.Call, r.Sub = int32(c.int("task")), int16(min(c.int("call"), math.MaxInt16)), int16(min(c.int("sub"), math.MaxInt16))
		r.ToolTime = c.micros(int64(min(c.uvarint(), math.MaxInt64)))
		r.FinalCall = c.uvarint() != 0
		if r.Call == 0 {
			c.fail("call 0 with the task flag set")
		}
	}
	if flags&cfEndpoint != 0 {
		if r.Endpoint = int16(min(c.int("endpoint"), math.MaxInt16)); r.Endpoint == 0 {
			c.fail("endpoint 0 with the endpoint flag set")
		}
	}
	if flags&cfStage != 0 {
		if r.Stage = int16(min(c.int("stage"), math.MaxInt16)); r.Stage == 0 {
			c.fail("stage 0 with the stage flag set")
		}
	}
	if c.err == nil && len(c.b) > 0 {
		c.fail("%d bytes after the record", len(c.b))
	}
	return c.err
}

// eachCompact decodes a records.bin stream after its magic, as Each.
func eachCompact(br *bufio.Reader, f func(*Record) error) error {
	var buf []byte
	var r Record
	for n := 1; ; n++ {
		size, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("record %d: %w", n, ErrTruncated)
		}
		if size > 1<<30 {
			return fmt.Errorf("record %d: a frame of %d bytes: not a records.bin", n, size)
		}
		if uint64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(br, buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("record %d: %w", n, ErrTruncated)
			}
			return fmt.Errorf("record %d: %w", n, err)
		}
		if err := decodeCompact(buf, &r); err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		if err := f(&r); err != nil {
			return err
		}
	}
}

// isCompact reports whether a stream starts with the compact format's magic (and reads it).
func isCompact(br *bufio.Reader) (bool, error) {
	head, err := br.Peek(len(compactMagic))
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return false, err
	}
	if !bytes.Equal(head, compactMagic) {
		if len(head) >= len(compactMagic)-1 && bytes.Equal(head[:len(compactMagic)-1], compactMagic[:len(compactMagic)-1]) {
			return false, fmt.Errorf("records.bin of version %d: this llmbench reads version %d", head[len(head)-1], compactMagic[len(compactMagic)-1])
		}
		return false, nil
	}
	_, err = br.Discard(len(compactMagic))
	return true, err
}
