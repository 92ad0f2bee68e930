package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxLine bounds one JSONL line (a long-context prompt can be megabytes).
const maxLine = 256 << 20

// MaxTraceSpan bounds the arrival offsets of a trace: jsonl arrival_s, and the spread of
// Mooncake timestamps or Azure TIMESTAMPs. Ten years is far beyond any replay, and keeps
// offsets well inside time.Duration, which overflows to negative past about 292 years.
const MaxTraceSpan = 87660 * time.Hour // 10 × 365.25 days

// spanLimit describes MaxTraceSpan in errors.
const spanLimit = "10 years"

// arrivalSpan tracks the earliest and latest offsets of a trace's rows, each relative to
// the first row, so that none stretches the trace beyond MaxTraceSpan.
type arrivalSpan struct {
	lo, hi time.Duration
	seen   bool
}

// add admits offset d unless the trace would then span more than MaxTraceSpan. The
// comparisons are written so that a saturated d cannot overflow them.
func (s *arrivalSpan) add(d time.Duration) bool {
	if s.seen && (d > s.lo+MaxTraceSpan || d < s.hi-MaxTraceSpan) {
		return false
	}
	if !s.seen || d < s.lo {
		s.lo = d
	}
	if !s.seen || d > s.hi {
		s.hi = d
	}
	s.seen = true
	return true
}

// offset converts v units (a trace's own scale: ms, s) since the first row into a
// duration, reporting false when it is further away than MaxTraceSpan (and so may not fit).
func offset(v, first float64, unit time.Duration) (time.Duration, bool) {
	off := (v - first) * float64(unit)
	if !(math.Abs(off) <= float64(MaxTraceSpan)) {
		return 0, false
	}
	return time.Duration(math.Round(off)), true
}

// tokenCount checks a length a dataset gives: lo..MaxTokens.
func tokenCount(key string, n, lo int) error {
	if n < lo || n > MaxTokens {
		return fmt.Errorf("%s %d must be in %d..%d", key, n, lo, MaxTokens)
	}
	return nil
}

// forLines calls f with each non-blank line and its 1-based number.
func forLines(path string, f func(line []byte, n int) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := f(line, n); err != nil {
			return fmt.Errorf("workload: %s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("workload: %s:%d: %w", path, n+1, err)
	}
	return nil
}

// strictUnmarshal decodes one JSON value and rejects trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	// Not dec.More(): it says false for a stray ']' or '}', which is trailing data too.
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// jsonProblem says what is wrong with a dataset's JSON in the dataset's words, not Go's
// ("field output_tokens: a string where a number belongs", not "cannot unmarshal string into
// Go struct field jsonlRow.output_tokens of type int").
func jsonProblem(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.Kind().String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64, reflect.Uint, reflect.Ptr:
			want = "number"
		case reflect.Slice:
			want = "list"
		case reflect.Struct, reflect.Map:
			want = "object"
		}
		if te.Type.Kind() == reflect.Ptr {
			if k := te.Type.Elem().Kind(); k == reflect.String {
				want = "string"
			} else if k == reflect.Slice {
				want = "list"
			}
		}
		if te.Field == "" {
			return fieldError{fmt.Errorf("a %s where a %s belongs", te.Value, want)}
		}
		return fieldError{fmt.Errorf("field %s: a %s where a %s belongs", te.Field, te.Value, want)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "invalid character "))
	}
	return err
}

// fieldError is JSON of the right shape with a field of the wrong type.
type fieldError struct{ error }

func (e fieldError) Unwrap() error { return e.error }

// jsonlRow is a line of a jsonl dataset, as WriteJSONL writes it.
type jsonlRow struct {
	Prompt       *string   `json:"prompt"`
	Messages     []Message `json:"messages"`
	InputTokens  *int      `json:"input_tokens"`
	OutputTokens *int      `json:"output_tokens"`
	ArrivalS     *float64  `json:"arrival_s"`
	PrefixTokens int       `json:"prefix_tokens"`
	PrefixGroup  int       `json:"prefix_group"`
	// Images are image files (paths relative to the dataset's folder) sent with the row's
	// prompt, as ImageConfig makes synthetic ones.
	Images []string `json:"images"`
}

func loadJSONL(path string) ([]row, error) {
	var rows []row
	err := forLines(path, func(line []byte, n int) error {
		var jr jsonlRow
		if err := strictUnmarshal(line, &jr); err != nil {
			if errors.As(err, new(fieldError)) {
				return err
			}
			return fmt.Errorf("not a JSON object: %w", err)
		}
		if err := tokenCount("prefix_tokens", jr.PrefixTokens, 0); err != nil {
			return err
		}
		if jr.PrefixGroup < 0 {
			return fmt.Errorf("prefix_group %d must be >= 0", jr.PrefixGroup)
		}
		rw := row{line: n, prefixTokens: jr.PrefixTokens, prefixGroup: jr.PrefixGroup}
		if jr.Prompt != nil && *jr.Prompt == "" {
			return errors.New(`empty "prompt"`)
		}
		if jr.Prompt == nil && len(jr.Messages) == 0 {
			return errors.New(`no "prompt" or "messages"`)
		}
		var texts []string
		hasText := false
		for i, m := range jr.Messages {
			if m.Role == "" {
				return fmt.Errorf("messages[%d] has no role", i)
			}
			texts = append(texts, m.Content)
			hasText = hasText || m.Content != ""
		}
		if jr.Prompt == nil && !hasText {
			// Nothing to send and nothing to count: the server would see an empty prompt.
			return errors.New(`every "messages" entry has an empty "content"`)
		}
		rw.messages = jr.Messages
		if jr.Prompt != nil {
			// With both, "prompt" is the completions form of the same request.
			rw.prompt = *jr.Prompt
		} else {
			// The completions API (and Ollama's /api/generate) gets the contents joined;
			// the input count is the conversation as Config.Chat formats it, or the
			// contents' own tokens without one.
			rw.prompt = strings.Join(texts, "\n")
		}
		if jr.OutputTokens != nil {
			if err := tokenCount("output_tokens", *jr.OutputTokens, 1); err != nil {
				return err
			}
			rw.output = *jr.OutputTokens
		}
		if jr.InputTokens != nil {
			if err := tokenCount("input_tokens", *jr.InputTokens, 1); err != nil {
				return err
			}
			rw.input = *jr.InputTokens
		}
		if jr.ArrivalS != nil {
			a := *jr.ArrivalS
			if !(a >= 0 && a <= MaxTraceSpan.Seconds()) {
				return fmt.Errorf("arrival_s %v must be an offset in 0..%.0f s (%s)", a, MaxTraceSpan.Seconds(), spanLimit)
			}
			rw.arrival, rw.hasArrival = time.Duration(math.Round(a*1e9)), true
		}
		if len(rows) > 0 && rw.hasArrival != rows[0].hasArrival {
			return fmt.Errorf("arrival_s on some rows but not others (line %d has it: %v)", rows[0].line, rows[0].hasArrival)
		}
		for i, name := range jr.Images {
			p := name
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(path), p)
			}
			if err := checkImageFile(p); err != nil {
				return fmt.Errorf("images[%d] %s: %w", i, name, err)
			}
			rw.images = append(rw.images, p)
		}
		rows = append(rows, rw)
		return nil
	})
	sortArrivals(rows)
	return rows, err
}

// sortArrivals orders trace rows by arrival (stable, so equal times keep file order).
func sortArrivals(rows []row) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].arrival < rows[j].arrival })
}

// ShareGPT entries: {"id": ..., "conversations": [{"from": "human", "value": ...}, ...]}.
type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

func isHuman(from string) bool { return from == "human" || from == "user" }

// loadShareGPT reads a ShareGPT JSON array (or JSONL of the same entries). The prompt is
// the first human turn; the reply that follows it gives the output length. Entries with
// no human turn, an empty one, or no reply are skipped and counted by reason.
func loadShareGPT(path string) ([]row, map[string]int, error) {
	skipped := map[string]int{}
	var rows []row
	add := func(e shareGPTEntry, line int) {
		h := -1
		for i, c := range e.Conversations {
			if isHuman(c.From) {
				h = i
				break
			}
		}
		switch {
		case len(e.Conversations) == 0:
			skipped["no_conversation"]++
		case h < 0:
			skipped["no_human_turn"]++
		case strings.TrimSpace(e.Conversations[h].Value) == "":
			skipped["empty_prompt"]++
		case h+1 >= len(e.Conversations) || isHuman(e.Conversations[h+1].From):
			skipped["no_reply"]++
		case strings.TrimSpace(e.Conversations[h+1].Value) == "":
			skipped["empty_reply"]++
		default:
			rows = append(rows, row{line: line, prompt: e.Conversations[h].Value, reply: e.Conversations[h+1].Value})
		}
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("workload: %w", err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<20)
	first, err := firstNonSpace(br)
	if err != nil {
		return nil, nil, fmt.Errorf("workload: %s: %w", path, err)
	}
	if first != '[' {
		err := forLines(path, func(line []byte, n int) error {
			var e shareGPTEntry
			if err := strictUnmarshal(line, &e); err != nil {
				return fmt.Errorf("not a ShareGPT entry: %w", err)
			}
			add(e, n)
			return nil
		})
		return rows, skipped, err
	}
	dec := json.NewDecoder(br)
	entries := 0
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("workload: %s: %w", path, err)
	}
	for dec.More() {
		off := dec.InputOffset()
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("workload: %s:%d: not a ShareGPT entry: %w", path, lineAt(path, off), jsonProblem(err))
		}
		entries++
		add(e, entries)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("workload: %s:%d: %w", path, lineAt(path, dec.InputOffset()), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("workload: %s:%d: trailing data after the JSON array", path, lineAt(path, dec.InputOffset()))
	}
	return rows, skipped, nil
}

func firstNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil {
			if err == io.EOF {
				return 0, errors.New("empty file")
			}
			return 0, err
		}
		if c := b[i-1]; c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != 0xEF && c != 0xBB && c != 0xBF {
			return c, nil
		}
	}
}

// lineAt returns the 1-based line of the first non-space byte at or after offset off
// (a JSON decoder's offset points at the separator before a value). It reads the file
// again, so it is only used to report an error.
func lineAt(path string, off int64) int {
	fh, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<20)
	line := 1
	for pos := int64(0); ; pos++ {
		c, err := br.ReadByte()
		if err != nil {
			return line
		}
		if pos >= off && strings.IndexByte(", \t\r\n", c) < 0 {
			return line
		}
		if c == '\n' {
			line++
		}
	}
}

// mooncakeRow is a line of a Mooncake trace.
type mooncakeRow struct {
	Timestamp    *float64 `json:"timestamp"` // ms
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

func loadMooncake(path string, speed float64) ([]row, error) {
	var rows []row
	var first float64 // the first row's timestamp: offsets are taken from it
	var span arrivalSpan
	err := forLines(path, func(line []byte, n int) error {
		var m mooncakeRow
		if err := strictUnmarshal(line, &m); err != nil {
			return fmt.Errorf("not a Mooncake trace row: %w", err)
		}
		var missing []string
		if m.Timestamp == nil {
			missing = append(missing, "timestamp")
		}
		if m.InputLength == nil {
			missing = append(missing, "input_length")
		}
		if m.OutputLength == nil {
			missing = append(missing, "output_length")
		}
		if len(missing) > 0 {
			return fmt.Errorf("missing %s", strings.Join(missing, ", "))
		}
		if *m.Timestamp < 0 || math.IsNaN(*m.Timestamp) || math.IsInf(*m.Timestamp, 0) {
			return fmt.Errorf("timestamp %v must be a finite number of ms >= 0", *m.Timestamp)
		}
		if err := errors.Join(tokenCount("input_length", *m.InputLength, 0), tokenCount("output_length", *m.OutputLength, 0)); err != nil {
			return err
		}
		if len(rows) == 0 {
			first = *m.Timestamp
		}
		at, ok := offset(*m.Timestamp, first, time.Millisecond)
		if !ok || !span.add(at) {
			return fmt.Errorf("timestamp %v ms stretches the trace beyond %s (%v)", *m.Timestamp, spanLimit, MaxTraceSpan)
		}
		rw := row{line: n, input: *m.InputLength, output: *m.OutputLength, hashIDs: m.HashIDs, hasArrival: true, arrival: at}
		rw.clampLengths()
		rows = append(rows, rw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, rebase(path, rows, span, speed)
}

// clampLengths raises 0 lengths to 1 (a request needs a prompt and max_tokens >= 1),
// marking the row so the change is counted.
func (rw *row) clampLengths() {
	if rw.input < 1 || rw.output < 1 {
		rw.input, rw.output, rw.clamped = max(1, rw.input), max(1, rw.output), true
	}
}

// rebase makes arrivals offsets from the earliest one, divided by speed, then sorts. A
// slowed-down replay (speed < 1) must still fit MaxTraceSpan.
func rebase(path string, rows []row, span arrivalSpan, speed float64) error {
	if float64(span.hi-span.lo)/speed > float64(MaxTraceSpan) {
		return fmt.Errorf("workload: %s: the trace spans %v; at trace speed %v its replay would last over %s", path, span.hi-span.lo, speed, spanLimit)
	}
	for i := range rows {
		rows[i].arrival = time.Duration(float64(rows[i].arrival-span.lo) / speed)
	}
	sortArrivals(rows)
	return nil
}

// azureTimeLayouts are the TIMESTAMP forms of the Azure LLM inference traces
// ("2023-11-16 18:15:46.6805900").
var azureTimeLayouts = []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02T15:04:05.999999999"}

// maxAzureSeconds bounds a TIMESTAMP given in seconds so that it converts to a time
// exactly (beyond 2^53 a float64 no longer holds whole seconds).
const maxAzureSeconds = 1 << 53

// parseAzureTime reads a TIMESTAMP as a date-time or as seconds (Unix time, or offsets).
// It returns a time rather than a duration: absolute date-times are decades from the
// epoch, and only their differences need to fit a time.Duration.
func parseAzureTime(s string) (time.Time, error) {
	for _, l := range azureTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(v) <= maxAzureSeconds {
		sec := math.Floor(v)
		return time.Unix(int64(sec), int64(math.Round((v-sec)*1e9))), nil
	}
	return time.Time{}, fmt.Errorf("TIMESTAMP %q is neither a date-time (2006-01-02 15:04:05.9999999) nor seconds (within ±2^53)", s)
}

// loadAzure reads an Azure LLM inference trace: CSV with TIMESTAMP, ContextTokens and
// GeneratedTokens columns (found by header name, in any order).
func loadAzure(path string, speed float64) ([]row, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer fh.Close()
	cr := csv.NewReader(bufio.NewReaderSize(fh, 1<<20))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("workload: %s:1: reading the header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	want := []string{"timestamp", "contexttokens", "generatedtokens"}
	idx := make([]int, len(want))
	var missing []string
	for i, w := range want {
		c, ok := col[w]
		if !ok {
			missing = append(missing, w)
		}
		idx[i] = c
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("workload: %s:1: header %q lacks %s (want TIMESTAMP,ContextTokens,GeneratedTokens)", path, strings.Join(header, ","), strings.Join(missing, ", "))
	}
	var rows []row
	var first time.Time // the first row's TIMESTAMP: offsets are taken from it
	var span arrivalSpan
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// FieldPos is only defined after a successful Read: a parse error carries its
			// own position; any other error is reported at the line after the last record.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("workload: %s:%d:%d: %w", path, pe.Line, pe.Column, pe.Err)
			}
			return nil, fmt.Errorf("workload: %s:%d: %w", path, line+1, err)
		}
		line, _ = cr.FieldPos(0)
		field := func(i int) string {
			if idx[i] < len(rec) {
				return strings.TrimSpace(rec[idx[i]])
			}
			return ""
		}
		ts, err := parseAzureTime(field(0))
		if err != nil {
			return nil, fmt.Errorf("workload: %s:%d: %w", path, line, err)
		}
		in, errIn := strconv.Atoi(field(1))
		out, errOut := strconv.Atoi(field(2))
		if errIn != nil || errOut != nil || in < 0 || out < 0 || in > MaxTokens || out > MaxTokens {
			return nil, fmt.Errorf("workload: %s:%d: ContextTokens %q and GeneratedTokens %q must be whole numbers in 0..%d", path, line, field(1), field(2), MaxTokens)
		}
		if len(rows) == 0 {
			first = ts
		}
		// Sub saturates rather than overflowing; add rejects a saturated offset.
		at := ts.Sub(first)
		if !span.add(at) {
			return nil, fmt.Errorf("workload: %s:%d: TIMESTAMP %q stretches the trace beyond %s (%v)", path, line, field(0), spanLimit, MaxTraceSpan)
		}
		rw := row{line: line, input: in, output: out, arrival: at, hasArrival: true}
		rw.clampLengths()
		rows = append(rows, rw)
	}
	return rows, rebase(path, rows, span, speed)
}
