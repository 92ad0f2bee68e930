package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/tokenizer"
)

// Info describes a loaded workload, for summaries and the dataset command.
type Info struct {
	Dataset string
	// Rows is the number of usable rows of a finite dataset (0 for random).
	Rows int
	// Skipped counts rows left out, by reason (e.g. "no_reply" for a ShareGPT
	// conversation whose first human turn has no answer). Nothing is dropped uncounted.
	Skipped map[string]int
	// Clamped counts trace rows whose 0 input or output length was raised to 1.
	Clamped int
	// Trace is true when requests carry arrival times; Span is the trace's length after
	// TraceSpeed, and Period the offset added each time the trace is replayed again.
	Trace        bool
	Span, Period time.Duration
}

// Describe returns the Info of a source made by New (zero Info for other sources).
func Describe(s Source) Info {
	if d, ok := s.(interface{ Info() Info }); ok {
		return d.Info()
	}
	return Info{}
}

// New builds the source cfg describes. tok measures prompts; it may be nil in lengths-only
// mode, where o200k_base counts the tokens of datasets that bring text.
func New(cfg Config, tok tokenizer.Tokenizer) (Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kind, path := cfg.datasetKind()
	needTok := !cfg.LengthsOnly || kind == DatasetJSONL || kind == DatasetShareGPT
	if tok == nil && needTok {
		if !cfg.LengthsOnly {
			return nil, fmt.Errorf("workload: dataset %s needs a tokenizer", kind)
		}
		var err error
		if tok, err = tokenizer.Load("o200k_base"); err != nil {
			return nil, err
		}
	}
	s := &source{cfg: cfg, kind: kind, tok: tok, info: Info{Dataset: kind}}
	if !cfg.LengthsOnly && cfg.synthetic() {
		syn, err := newSynth(tok)
		if err != nil {
			return nil, err
		}
		s.syn = syn
	}
	if cfg.Chat != nil && !cfg.LengthsOnly {
		if err := s.initChat(); err != nil {
			return nil, err
		}
	}
	var err error
	switch kind {
	case DatasetJSONL:
		s.rows, err = loadJSONL(path)
	case DatasetShareGPT:
		s.rows, s.info.Skipped, err = loadShareGPT(path)
	case DatasetMooncake:
		s.rows, err = loadMooncake(path, cfg.traceSpeed())
	case DatasetAzure:
		s.rows, err = loadAzure(path, cfg.traceSpeed())
	case DatasetAgent:
		if s.tasks, err = loadAgentTrace(path); err == nil {
			for _, t := range s.tasks {
				s.taskStride = max(s.taskStride, len(t.calls))
			}
			s.info.Rows = len(s.tasks)
		}
	}
	if err != nil {
		return nil, err
	}
	if kind != DatasetRandom && kind != DatasetAgent {
		if len(s.rows) == 0 {
			return nil, fmt.Errorf("workload: %s has no usable rows (skipped: %v)", path, s.info.Skipped)
		}
		s.lazy = make([]lazyCounts, len(s.rows))
		s.info.Rows = len(s.rows)
		s.trace = s.rows[0].hasArrival
		for i := range s.rows {
			if s.rows[i].clamped {
				s.info.Clamped++
			}
		}
		if cfg.TraceOffset > 0 {
			if s.rows, err = shiftTrace(s.rows, s.trace, cfg.TraceOffset, cfg.traceSpeed()); err != nil {
				return nil, err
			}
			s.lazy = s.lazy[:len(s.rows)]
			s.info.Rows = len(s.rows)
		}
		if s.trace {
			n := len(s.rows)
			span := s.rows[n-1].arrival - s.rows[0].arrival
			s.period = span + span/time.Duration(max(1, n-1))
			if s.period <= 0 {
				s.period = time.Duration(float64(time.Second) / cfg.traceSpeed())
			}
			s.info.Trace, s.info.Span, s.info.Period = true, span, s.period
		}
	}
	return s, nil
}

type source struct {
	cfg  Config
	kind string
	tok  tokenizer.Tokenizer
	syn  *synth // nil in lengths-only mode and for datasets with their own text
	info Info

	rows   []row
	lazy   []lazyCounts
	trace  bool
	period time.Duration

	prefixes prefixCache
	// tasks are an agent trace's sessions (agenttrace.go); taskStride the most calls of one.
	tasks      []taskPlan
	taskStride int
	// chatOverhead is the tokens the chat template adds to a one-message conversation
	// (cfg.Chat set, synthetic prompts): the first guess of how far to shorten a
	// message's text before sizing the formatted conversation exactly.
	chatOverhead int
}

// row is one dataset entry.
type row struct {
	line       int // 1-based line (or ShareGPT entry) in the file, for messages
	prompt     string
	messages   []Message
	reply      string // ShareGPT: the answer, whose token count is the output length
	input      int    // traces: prompt length; jsonl: input_tokens when given
	output     int    // 0: none given
	arrival    time.Duration
	hasArrival bool
	hashIDs    []int64
	clamped    bool
	// jsonl written by WriteJSONL keeps the shared prefix it was made with.
	prefixTokens, prefixGroup int
	images                    []string // image files sent with the prompt (jsonl)
}

// lazyCounts caches a row's token counts, computed on first use (a large ShareGPT file is
// mostly never sampled, so it is not tokenized up front).
type lazyCounts struct {
	once    sync.Once
	in, out int
}

func (s *source) Info() Info { return s.info }

// Len is the number of rows of a finite dataset, 0 for random.
func (s *source) Len() int { return len(s.rows) }

// Request builds request i of a level. Datasets are shuffled per (seed, level, pass) and
// cycled; traces replay in order, each pass shifted by Info.Period.
func (s *source) Request(level, i int) Request {
	if s.kind == DatasetRandom {
		return s.random(level, i)
	}
	if s.kind == DatasetAgent {
		return s.task(level, i)
	}
	n := len(s.rows)
	pass, k := i/n, i%n
	idx := k
	if !s.trace {
		idx = permute(k, n, streamKey(s.cfg.Seed, purposeOrder, int64(level)<<32^int64(pass)))
	}
	rw := &s.rows[idx]
	r := newRand(s.cfg.Seed, purposeLength, int64(level), int64(i))
	var req Request
	if s.trace {
		req.HasArrival = true
		req.Arrival = rw.arrival + time.Duration(pass)*s.period
	}
	switch s.kind {
	case DatasetJSONL, DatasetShareGPT:
		lc := &s.lazy[idx]
		lc.once.Do(func() { lc.in, lc.out = s.countRow(rw) })
		req.InputTokens, req.OutputTokens = lc.in, lc.out
		if req.OutputTokens == 0 {
			req.OutputTokens = s.cfg.OutputTokens.Sample(r)
		}
		if !s.cfg.LengthsOnly {
			req.Prompt, req.Messages = rw.prompt, rw.messages
			for _, p := range rw.images {
				req.Images = append(req.Images, imageFile(p))
			}
		}
		req.PrefixTokens, req.PrefixGroup = rw.prefixTokens, rw.prefixGroup
	case DatasetMooncake:
		req.InputTokens, req.OutputTokens = rw.input, rw.output
		req.PrefixHashes = hashBlocks(rw.hashIDs)
		req.BlockTokens = s.cfg.blockTokens()
		if s.syn != nil {
			req.Prompt, req.InputTokens = s.mooncakePrompt(level, i, rw)
		}
	case DatasetAzure:
		req.InputTokens, req.OutputTokens = rw.input, rw.output
		s.fillSynthetic(&req, level, i)
	}
	return req
}

func (s *source) countRow(rw *row) (in, out int) {
	in = rw.input
	if !s.cfg.LengthsOnly || in == 0 {
		msgs := rw.messages
		if msgs == nil || s.cfg.OneMessage {
			msgs = []Message{{Role: "user", Content: rw.prompt}}
		}
		if n, ok := s.chatCount(msgs); ok {
			in = n
		} else {
			in = len(s.tok.Encode(rw.prompt))
		}
	}
	out = rw.output
	if rw.reply != "" {
		out = max(1, len(s.tok.Encode(rw.reply)))
	}
	return in, out
}

func (s *source) random(level, i int) Request {
	if s.cfg.Agent.On() {
		return s.task(level, i)
	}
	if s.cfg.Turns > 1 {
		return s.turn(level, i)
	}
	r := newRand(s.cfg.Seed, purposeLength, int64(level), int64(i))
	req := Request{InputTokens: s.cfg.InputTokens.Sample(r), OutputTokens: s.cfg.OutputTokens.Sample(r)}
	s.fillSynthetic(&req, level, i)
	return req
}

// fillSynthetic applies the shared prefix and writes the prompt of req.InputTokens tokens.
func (s *source) fillSynthetic(req *Request, level, i int) {
	p := s.cfg.PrefixTokens
	if p > 0 {
		req.InputTokens = max(req.InputTokens, p+1)
		req.PrefixTokens, req.PrefixGroup = p, i%s.cfg.prefixGroups()
	}
	if s.syn == nil {
		return
	}
	r := newRand(s.cfg.Seed, purposePrompt, int64(level), int64(i))
	var b strings.Builder
	b.Grow(req.InputTokens * 7)
	if p > 0 {
		b.WriteString(s.prefix(req.PrefixGroup))
	}
	s.syn.write(&b, s.textTokens(req.InputTokens-p), identity(s.cfg.Seed, level, i), true, r, nil)
	req.Prompt, req.InputTokens = s.sizePrompt(s.syn.start(b.String()), req.InputTokens, r)
}

// initChat checks that the chat template formats the conversations this source makes, and
// measures what it adds to one message.
func (s *source) initChat() error {
	chat := s.cfg.Chat
	sample := "Measure the words of this message"
	if s.syn != nil {
		var b strings.Builder
		s.syn.write(&b, 64, 0, false, newRand(s.cfg.Seed, purposePrompt, -1, 0), nil)
		sample = s.syn.start(b.String())
	}
	convs := [][]Message{{{Role: "user", Content: sample}}}
	if s.cfg.Turns > 1 {
		convs = append(convs, []Message{{Role: "user", Content: sample}, {Role: "assistant", Content: sample}, {Role: "user", Content: sample}})
	}
	n := 0
	for i, c := range convs {
		m, err := chat.CountChat(c)
		if err != nil {
			return fmt.Errorf("workload: %w (give --chat-template another template, or --chat-template none to count message text alone)", err)
		}
		if i == 0 {
			n = m
		}
	}
	s.chatOverhead = max(0, n-len(s.tok.Encode(sample)))
	if kind, _ := s.cfg.datasetKind(); kind == DatasetRandom && !s.cfg.InputTokens.Clamped() {
		if least := s.chatOverhead + max(s.cfg.PrefixTokens, 0) + 1; s.cfg.InputTokens.Min() < least {
			return fmt.Errorf("workload: input tokens %s: the chat template (%s) adds %d tokens to every request, so a prompt needs at least %d; raise the input tokens, or give --chat-template none to size message text alone",
				s.cfg.InputTokens, chat.Source(), s.chatOverhead, least)
		}
	}
	return nil
}

// chatCount is msgs' token count as the server counts a chat request: the chat template's
// formatting, tokenized. ok is false without a template, or when it refuses msgs (a
// ChatWatch keeps the reason, for the run to report).
func (s *source) chatCount(msgs []Message) (int, bool) {
	if s.cfg.Chat == nil || s.cfg.LengthsOnly {
		return 0, false
	}
	n, err := s.cfg.Chat.CountChat(msgs)
	return n, err == nil
}

// textTokens is how many tokens of text to write for a one-message prompt of n tokens: n
// less what the chat template adds, at least 1.
func (s *source) textTokens(n int) int {
	return max(1, n-s.chatOverhead)
}

// sizePrompt makes text, a prompt sent alone (the completions prompt, or the chat APIs'
// one user message), exactly n tokens as the server counts them, and returns it with its
// count (above n only when the template alone is longer).
func (s *source) sizePrompt(text string, n int, r *rand.Rand) (string, int) {
	if s.cfg.Chat == nil {
		return s.syn.exact(text, n, r)
	}
	return s.syn.exactBy(chatText(text), n, r, func(t string) int { return s.countWith(nil, t) })
}

// chatText is text as a chat message's content: without a leading space, so that templates
// that trim the content (Llama 3's Jinja) and those that do not (Ollama's own Go
// templates) format the same text.
func chatText(text string) string { return strings.TrimLeft(text, " ") }

// countWith counts history plus a user message text: formatted by the chat template when
// there is one, else the texts' own tokens.
func (s *source) countWith(history []Message, text string) int {
	msgs := append(history[:len(history):len(history)], Message{Role: "user", Content: text})
	if n, ok := s.chatCount(msgs); ok {
		return n
	}
	n := 0
	for _, m := range msgs {
		n += len(s.tok.Encode(m.Content))
	}
	return n
}

// prefix returns shared prefix g: exactly PrefixTokens tokens, the same for every level.
func (s *source) prefix(g int) string {
	return s.prefixes.get(g, func() string {
		r := newRand(s.cfg.Seed, purposePrefix, int64(g), 0)
		var b strings.Builder
		// Identities of a pseudo-level -1 keep prefixes distinct from each other and from
		// the requests' own parts.
		s.syn.write(&b, s.cfg.PrefixTokens, identity(s.cfg.Seed, -1, g), true, r, nil)
		text, _ := s.syn.exact(s.syn.start(b.String()), s.cfg.PrefixTokens, r)
		return text
	})
}

// mooncakePrompt concatenates one block of text per hash id (equal ids give identical
// blocks, so prompts share exactly the prefixes the trace says they share), cuts the last
// block at the input length, and fills any tokens beyond the blocks with unique text.
func (s *source) mooncakePrompt(level, i int, rw *row) (string, int) {
	bt := s.cfg.blockTokens()
	var b strings.Builder
	left := s.textTokens(rw.input)
	for _, h := range rw.hashIDs {
		if left == 0 {
			break
		}
		var cuts []int
		var blk strings.Builder
		s.syn.write(&blk, bt, 0, false, newRand(s.cfg.Seed, purposeBlock, h, 0), &cuts)
		take := min(left, bt)
		b.WriteString(blk.String()[:cuts[take-1]])
		left -= take
	}
	r := newRand(s.cfg.Seed, purposeFill, int64(level), int64(i))
	if left > 0 {
		s.syn.write(&b, left, identity(s.cfg.Seed, level, i), true, r, nil)
	}
	return s.sizePrompt(s.syn.start(b.String()), rw.input, r)
}

// hashBlocks turns trace hash ids into the block hashes a simulator keys its prefix cache
// on: a block's hash covers its whole prefix, as in vLLM, so equal hashes mean equal
// prefixes.
func hashBlocks(ids []int64) []uint64 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]uint64, len(ids))
	var h uint64 = 0x6a09e667f3bcc908
	for i, id := range ids {
		h = mix64(h ^ uint64(id)*0x9e3779b97f4a7c15)
		out[i] = h
	}
	return out
}

// turn builds turn k of conversation c (i = c*Turns + k). Each turn's user message and the
// assistant reply that follows it are drawn from (seed, level, c, k) alone, so turn k's
// history is exactly the earlier turns' messages, and each reply has the length the
// earlier request asked for (max_tokens with ignore_eos). Message contents all start with
// a word, so their concatenation (the completions prompt, joined by synth.sep) keeps the
// sum of their token counts. With a chat template, each turn's user message is sized so
// that the formatted conversation up to it is the turns' lengths summed (what the template
// adds to every message comes out of the user messages), and InputTokens is that count.
func (s *source) turn(level, i int) Request {
	n := s.cfg.Turns
	c, k := i/n, i%n
	req := Request{Conversation: c, Turn: k, Turns: n}
	if k > 0 {
		req.ThinkTime = s.cfg.ThinkTime
	}
	chat := s.syn != nil && s.cfg.Chat != nil
	var texts []string
	for j := 0; j <= k; j++ {
		r := newRand(s.cfg.Seed, purposeTurn, int64(level)<<32^int64(c), int64(j))
		in, out := s.cfg.InputTokens.Sample(r), s.cfg.OutputTokens.Sample(r)
		// The conversation's intended length up to this turn's user message (chat sizes
		// each user message to it).
		target := req.InputTokens + in
		req.InputTokens += in
		if j < k {
			req.InputTokens += out
		} else {
			req.OutputTokens = out
		}
		if s.syn == nil {
			continue
		}
		var user string
		var got int
		if chat {
			history := req.Messages
			user, got = s.turnText(level, c, j, 0, s.textTokens(in), target, func(t string) int { return s.countWith(history, t) })
			if j == k {
				req.InputTokens = got
			}
		} else {
			user, got = s.turnText(level, c, j, 0, in, in, nil)
			req.InputTokens += got - in
		}
		req.Messages = append(req.Messages, Message{Role: "user", Content: user})
		texts = append(texts, user)
		if j < k {
			var exactly func(string) int
			if chat {
				exactly = func(t string) int { return len(s.tok.Encode(t)) }
			}
			reply, got := s.turnText(level, c, j, 1, out, out, exactly)
			if !chat {
				req.InputTokens += got - out
			}
			req.Messages = append(req.Messages, Message{Role: "assistant", Content: reply})
			texts = append(texts, reply)
		}
	}
	req.Prompt = strings.Join(texts, s.syn.sep())
	return req
}

// turnText writes the user (who 0) or assistant (who 1) message of turn j: n pieces, made
// exactly target tokens under count. With a count, the text is a chat message's (chatText);
// nil counts the text's own tokens, the text written to be joined into one prompt.
func (s *source) turnText(level, c, j, who, n, target int, count func(string) int) (string, int) {
	r := newRand(s.cfg.Seed, purposeTurn, int64(level)<<32^int64(c), int64(j)<<1|int64(who)+1<<40)
	var b strings.Builder
	// Identities from a pseudo-level below -1 keep conversations distinct from each other.
	s.syn.write(&b, n, identity(s.cfg.Seed, -2-level, (c*s.cfg.Turns+j)*2+who), true, r, nil)
	if count == nil {
		return s.syn.exact(s.syn.start(b.String()), target, r)
	}
	return s.syn.exactBy(chatText(b.String()), target, r, count)
}

// Faster replays src's arrivals scale times faster: each request's Arrival (a trace's, its
// passes' offsets included) divided by scale, the rest as src has it. It is Config.TraceSpeed
// applied to a source already loaded, so a trace is read once however many speeds are run.
func Faster(src Source, scale float64) Source {
	if scale == 1 {
		return src
	}
	return faster{src, scale}
}

type faster struct {
	src   Source
	scale float64
}

func (f faster) Request(level, i int) Request {
	r := f.src.Request(level, i)
	if r.HasArrival {
		r.Arrival = time.Duration(float64(r.Arrival) / f.scale)
	}
	return r
}

func (f faster) Len() int { return f.src.Len() }

func (f faster) Info() Info {
	in := Describe(f.src)
	in.Span = time.Duration(float64(in.Span) / f.scale)
	in.Period = time.Duration(float64(in.Period) / f.scale)
	return in
}

// shiftTrace starts a trace's replay at offset, a time of the trace's own (rows' arrivals
// are already divided by speed): the rows before it are dropped and the rest moved to
// start at 0, keeping their gaps.
func shiftTrace(rows []row, trace bool, offset time.Duration, speed float64) ([]row, error) {
	if !trace {
		return nil, fmt.Errorf("workload: --trace-offset %v applies to a trace with timestamps (mooncake, azure)", offset)
	}
	at := time.Duration(float64(offset) / speed)
	i := 0
	for i < len(rows) && rows[i].arrival < at {
		i++
	}
	if i == len(rows) {
		span := time.Duration(float64(rows[len(rows)-1].arrival) * speed)
		return nil, fmt.Errorf("workload: --trace-offset %v is past the trace's last request (at %v of its own time)", offset, span.Round(time.Millisecond))
	}
	out := rows[i:]
	for k := range out {
		out[k].arrival -= at
	}
	return out, nil
}
