package tokenizer

import (
	"container/heap"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// bpe is a byte-level BPE tokenizer: optional special-token splitting, optional NFC, a
// pre-tokenizer regex (run with regexp2, which has the lookahead these patterns need), and
// a merge loop per piece. Two merge rules cover the supported files:
//   - tiktoken: a pair may merge when the concatenated bytes are a token; priority = its id.
//   - HuggingFace: a pair may merge only when (left, right) is in the merges list; priority =
//     the merge's index. This is the rule the Rust implementation applies, so files whose ids
//     are not in merge order still encode exactly.
type bpe struct {
	name string

	vocab   map[string]int // token bytes -> id
	decoder [][]byte       // id -> bytes (nil for unused ids)

	// merges is nil in tiktoken mode.
	merges map[uint64]merge
	// byteIDs maps each byte to its single-byte token (HuggingFace mode).
	byteIDs [256]int
	// wholeWord: a piece that is itself a token is emitted as is without merging
	// (always in tiktoken; HuggingFace's ignore_merges).
	wholeWord bool

	pat *regexp2.Regexp
	// fast is a hand-written equivalent of pat when pat is one of the known patterns.
	fast func(runes []rune, i int) int
	// keepGaps: text between regex matches forms pieces too (HuggingFace Split "Isolated");
	// otherwise it is dropped ("Removed" with invert, and tiktoken).
	keepGaps bool
	// norms is the HuggingFace normalizer, applied in order (NFC, Prepend, Replace).
	norms []normStep

	// sp is set for SentencePiece-style files (char-level BPE, byte fallback): their
	// pre-tokenizer, byte-fallback and unknown tokens, and decoder (sentencepiece.go).
	sp *spConfig

	// specials are recognised in the input (HuggingFace added_tokens); empty for the OpenAI
	// encodings, whose reference is encode_ordinary.
	specials []special
	// specialsByFirst indexes specials by first byte, longest first (leftmost-longest match).
	specialsByFirst [256][]int

	cache pieceCache
}

// pieceCache remembers the ids of merged pieces: text repeats words, and merging is the
// costly part of encoding once pre-tokenization is fast. Sharded to keep lock contention
// low; a full shard is simply emptied.
type pieceCache struct {
	shards [16]struct {
		mu sync.RWMutex
		m  map[string][]int
	}
}

const (
	cacheMaxPiece = 64
	cachePerShard = 8192
)

func shardOf(piece string) int {
	return (len(piece)*31 + int(piece[0])*7 + int(piece[len(piece)-1])) & 15
}

func (c *pieceCache) get(piece string) ([]int, bool) {
	sh := &c.shards[shardOf(piece)]
	sh.mu.RLock()
	ids, ok := sh.m[piece]
	sh.mu.RUnlock()
	return ids, ok
}

func (c *pieceCache) put(piece string, ids []int) {
	sh := &c.shards[shardOf(piece)]
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= cachePerShard {
		sh.m = make(map[string][]int, 256)
	}
	sh.m[strings.Clone(piece)] = slices.Clone(ids)
	sh.mu.Unlock()
}

type merge struct {
	rank int32
	id   int32
}

type special struct {
	content    string
	id         int
	normalized bool // matched after normalization (HuggingFace "normalized": true)
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (t *bpe) Name() string { return t.name }

// Encode returns the token ids of text. Special-token text is recognised only for files
// that declare added tokens (as HuggingFace does with add_special_tokens=false); the OpenAI
// encodings treat all input as ordinary text.
func (t *bpe) Encode(text string) []int {
	out := make([]int, 0, len(text)/3+1)
	if len(t.specials) == 0 {
		return t.encodeOrdinary(t.normalize(text), true, out)
	}
	// Split on raw-text specials first, then normalize the rest and split on normalized
	// specials: the order HuggingFace's AddedVocabulary uses. atStart is true until
	// anything is emitted (Metaspace's prepend_scheme "first" prepends only there).
	atStart := true
	t.splitSpecials(text, false, func(seg string, id int) {
		if id >= 0 {
			out = append(out, id)
			atStart = false
			return
		}
		t.splitSpecials(t.normalize(seg), true, func(seg string, id int) {
			if id >= 0 {
				out = append(out, id)
			} else {
				out = t.encodeOrdinary(seg, atStart, out)
			}
			atStart = false
		})
	})
	return out
}

// splitSpecials calls f for each ordinary segment (id -1) and each special token found by
// leftmost-longest matching among the specials with the given normalized flag.
func (t *bpe) splitSpecials(text string, normalized bool, f func(seg string, id int)) {
	start := 0
	for i := 0; i < len(text); {
		cands := t.specialsByFirst[text[i]]
		if cands == nil {
			i++
			continue
		}
		matched := -1
		for _, si := range cands {
			sp := t.specials[si]
			if sp.normalized == normalized && strings.HasPrefix(text[i:], sp.content) {
				matched = si
				break // longest first
			}
		}
		if matched < 0 {
			i++
			continue
		}
		if start < i {
			f(text[start:i], -1)
		}
		f(t.specials[matched].content, t.specials[matched].id)
		i += len(t.specials[matched].content)
		start = i
	}
	if start < len(text) {
		f(text[start:], -1)
	}
}

// encodeOrdinary pre-tokenizes normalized text and appends each piece's ids; first says
// that text begins the input.
func (t *bpe) encodeOrdinary(text string, first bool, out []int) []int {
	if text == "" {
		return out
	}
	if t.sp != nil {
		return t.encodeSP(text, first, out)
	}
	runes := []rune(text)
	// Byte offset of each rune, so pieces are cut from the original string without
	// re-encoding (invalid UTF-8 was already replaced by []rune, as Rust's &str forbids it).
	if !utf8.ValidString(text) {
		text = string(runes)
	}
	offs := runeOffsets(text, len(runes))
	if t.fast != nil {
		for i := 0; i < len(runes); {
			e := t.fast(runes, i)
			out = t.encodePiece(text[offs[i]:offs[e]], out)
			i = e
		}
		return out
	}
	prev := 0
	m, _ := t.pat.FindRunesMatch(runes)
	for m != nil {
		if m.Length > 0 {
			if t.keepGaps && m.Index > prev {
				out = t.encodePiece(text[offs[prev]:offs[m.Index]], out)
			}
			out = t.encodePiece(text[offs[m.Index]:offs[m.Index+m.Length]], out)
			prev = m.Index + m.Length
		}
		m, _ = t.pat.FindNextMatch(m)
	}
	if t.keepGaps && prev < len(runes) {
		out = t.encodePiece(text[offs[prev]:], out)
	}
	return out
}

func runeOffsets(s string, n int) []int {
	offs := make([]int, 0, n+1)
	for i := range s {
		offs = append(offs, i)
	}
	return append(offs, len(s))
}

// encodePiece appends the ids of one pre-tokenized piece.
func (t *bpe) encodePiece(piece string, out []int) []int {
	if t.wholeWord || len(piece) == 1 {
		if id, ok := t.vocab[piece]; ok {
			return append(out, id)
		}
	}
	if len(piece) <= cacheMaxPiece {
		if ids, ok := t.cache.get(piece); ok {
			return append(out, ids...)
		}
	}
	if len(piece) <= smallPiece {
		n := len(out)
		out = t.mergeSmall(piece, out)
		t.cache.put(piece, out[n:])
		return out
	}
	return t.mergeHeap(piece, out)
}

// smallPiece is the piece length (bytes) up to which the quadratic scan beats the heap.
const smallPiece = 48

// pairRank returns the priority and resulting id of merging the symbols piece[a:b] (id ida)
// and piece[b:c] (id idb); ok is false when they do not merge.
func (t *bpe) pairRank(piece string, a, b, c, ida, idb int) (rank, id int, ok bool) {
	if t.merges == nil {
		id, ok := t.vocab[piece[a:c]]
		return id, id, ok
	}
	m, ok := t.merges[pairKey(ida, idb)]
	return int(m.rank), int(m.id), ok
}

// symbols appends the piece's initial symbols: their start offsets (then len(piece)) to
// starts and their ids to ids. Byte-level files start from bytes; SentencePiece-style
// ones from characters, a character outside the vocabulary falling back to its bytes'
// <0xNN> tokens, or else to the unknown token (consecutive ones fused when fuse_unk).
func (t *bpe) symbols(piece string, starts, ids []int) ([]int, []int) {
	if t.sp == nil {
		for i := 0; i < len(piece); i++ {
			starts = append(starts, i)
			if t.merges == nil {
				ids = append(ids, t.vocab[piece[i:i+1]])
			} else {
				ids = append(ids, t.byteIDs[piece[i]])
			}
		}
		return append(starts, len(piece)), ids
	}
	unk := false
	for i, r := range piece {
		ch := piece[i : i+utf8.RuneLen(r)]
		if id, ok := t.vocab[ch]; ok {
			starts, ids, unk = append(starts, i), append(ids, id), false
			continue
		}
		if t.sp.byteFallback {
			for j := 0; j < len(ch); j++ {
				starts, ids = append(starts, i+j), append(ids, t.sp.byteTokens[ch[j]])
			}
			unk = false
			continue
		}
		if unk && t.sp.fuseUnk {
			continue
		}
		starts, ids, unk = append(starts, i), append(ids, t.sp.unkID), true
	}
	return append(starts, len(piece)), ids
}

const noRank = int(^uint(0) >> 1)

// mergeSmall is the textbook loop: merge the lowest-priority adjacent pair (leftmost on
// ties) until none merges. O(n^2), allocation-free for short pieces.
func (t *bpe) mergeSmall(piece string, out []int) []int {
	var startsBuf, idsBuf, ranksBuf, newBuf [smallPiece + 1]int
	// symbol i is piece[starts[i]:starts[i+1]]
	starts, ids := t.symbols(piece, startsBuf[:0], idsBuf[:0])
	n := len(ids)
	ranks := ranksBuf[:n] // ranks[i]: pair (i, i+1)
	newIDs := newBuf[:n]
	rankAt := func(i int) {
		if i+1 >= len(ids) {
			ranks[i] = noRank
			return
		}
		r, id, ok := t.pairRank(piece, starts[i], starts[i+1], starts[i+2], ids[i], ids[i+1])
		if !ok {
			ranks[i] = noRank
			return
		}
		ranks[i], newIDs[i] = r, id
	}
	for i := range ids {
		rankAt(i)
	}
	for len(ids) > 1 {
		best, bi := noRank, -1
		for i := 0; i < len(ids)-1; i++ {
			if ranks[i] < best {
				best, bi = ranks[i], i
			}
		}
		if bi < 0 {
			break
		}
		ids[bi] = newIDs[bi]
		copy(ids[bi+1:], ids[bi+2:])
		ids = ids[:len(ids)-1]
		copy(starts[bi+1:], starts[bi+2:])
		starts = starts[:len(starts)-1]
		copy(ranks[bi+1:], ranks[bi+2:])
		copy(newIDs[bi+1:], newIDs[bi+2:])
		ranks, newIDs = ranks[:len(ids)], newIDs[:len(ids)]
		rankAt(bi)
		if bi > 0 {
			rankAt(bi - 1)
		}
	}
	return append(out, ids...)
}

// mergeHeap applies the same rule as mergeSmall in O(n log n) with a linked list of symbols
// and a priority queue with lazy invalidation, so 20k-character words stay fast.
func (t *bpe) mergeHeap(piece string, out []int) []int {
	n := len(piece)
	st := heapPool.Get().(*mergeState)
	defer heapPool.Put(st)
	st.reset(n)
	st.starts, st.ids = t.symbols(piece, st.starts[:0], st.ids[:0])
	k := len(st.ids)
	for j := 0; j < k; j++ {
		s := st.starts[j]
		st.syms[s] = sym{end: int32(st.starts[j+1]), prev: -1, next: -1, id: int32(st.ids[j])}
		if j > 0 {
			st.syms[s].prev = int32(st.starts[j-1])
		}
		if j+1 < k {
			st.syms[s].next = int32(st.starts[j+1])
		}
	}
	push := func(l int32) {
		r := st.syms[l].next
		if r < 0 {
			return
		}
		rank, id, ok := t.pairRank(piece, int(l), int(st.syms[l].end), int(st.syms[r].end), int(st.syms[l].id), int(st.syms[r].id))
		if ok {
			heap.Push(&st.q, candidate{rank: rank, left: l, right: r, rightEnd: st.syms[r].end, id: int32(id)})
		}
	}
	for j := 0; j+1 < k; j++ {
		push(int32(st.starts[j]))
	}
	for st.q.Len() > 0 {
		c := heap.Pop(&st.q).(candidate)
		l, r := &st.syms[c.left], &st.syms[c.right]
		if l.dead || r.dead || l.next != c.right || r.end != c.rightEnd {
			continue // stale: one side has merged since this pair was queued
		}
		l.end, l.id, l.next = r.end, c.id, r.next
		r.dead = true
		if r.next >= 0 {
			st.syms[r.next].prev = c.left
		}
		push(c.left)
		if l.prev >= 0 {
			push(l.prev)
		}
	}
	for i := int32(0); i >= 0; i = st.syms[i].next {
		out = append(out, int(st.syms[i].id))
	}
	return out
}

// Symbols are indexed by their start byte; a merge keeps the left one.
type sym struct {
	end, prev, next, id int32
	dead                bool
}

type candidate struct {
	rank        int
	left, right int32
	rightEnd    int32
	id          int32
}

type candQueue []candidate

func (q candQueue) Len() int { return len(q) }
func (q candQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}
func (q candQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *candQueue) Push(x any)   { *q = append(*q, x.(candidate)) }
func (q *candQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

type mergeState struct {
	syms        []sym // indexed by start offset
	starts, ids []int
	q           candQueue
}

func (s *mergeState) reset(n int) {
	if cap(s.syms) < n {
		s.syms = make([]sym, n)
	}
	s.syms = s.syms[:n]
	s.q = s.q[:0]
}

var heapPool = sync.Pool{New: func() any { return new(mergeState) }}

// Decode concatenates the bytes of ids (for SentencePiece-style files, as their decoder
// does); unknown ids are skipped.
func (t *bpe) Decode(ids []int) string {
	if t.sp != nil {
		return t.decodeSP(ids)
	}
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(t.decoder) {
			b.Write(t.decoder[id])
		}
	}
	return b.String()
}
