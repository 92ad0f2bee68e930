package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// gguf is a file read back by readGGUF, an independent reader written from the spec.
type gguf struct {
	version    uint32
	kv         map[string]any
	keys       []string
	infos      []tensorInfo
	dataOffset uint64 // absolute offset of the data section
	raw        []byte
}

type tensorInfo struct {
	name   string
	shape  []uint64
	typ    uint32
	offset uint64 // relative to dataOffset
}

type dec struct {
	b   []byte
	off int
}

func (d *dec) take(n int) []byte {
	if d.off+n > len(d.b) {
		panic(fmt.Sprintf("read %d bytes at %d past end %d", n, d.off, len(d.b)))
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}
func (d *dec) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }
func (d *dec) u64() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }
func (d *dec) str() string { return string(d.take(int(d.u64()))) }

func (d *dec) val(typ uint32) any {
	switch typ {
	case typeUint8:
		return d.take(1)[0]
	case typeInt8:
		return int8(d.take(1)[0])
	case typeUint16:
		return binary.LittleEndian.Uint16(d.take(2))
	case typeInt16:
		return int16(binary.LittleEndian.Uint16(d.take(2)))
	case typeUint32:
		return d.u32()
	case typeInt32:
		return int32(d.u32())
	case typeFloat32:
		return math.Float32frombits(d.u32())
	case typeBool:
		return d.take(1)[0] != 0
	case typeString:
		return d.str()
	case typeUint64:
		return d.u64()
	case typeInt64:
		return int64(d.u64())
	case typeFloat64:
		return math.Float64frombits(d.u64())
	case typeArray:
		et := d.u32()
		n := d.u64()
		out := make([]any, n)
		for i := range out {
			out[i] = d.val(et)
		}
		return out
	}
	panic(fmt.Sprintf("unknown value type %d", typ))
}

func readGGUF(t *testing.T, raw []byte) (g *gguf) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("malformed GGUF: %v", r)
		}
	}()
	d := &dec{b: raw}
	if magic := string(d.take(4)); magic != "GGUF" {
		t.Fatalf("magic %q, want GGUF", magic)
	}
	g = &gguf{version: d.u32(), kv: map[string]any{}, raw: raw}
	nt, nkv := d.u64(), d.u64()
	for range nkv {
		k := d.str()
		g.keys = append(g.keys, k)
		g.kv[k] = d.val(d.u32())
	}
	for range nt {
		ti := tensorInfo{name: d.str()}
		nd := d.u32()
		for range nd {
			ti.shape = append(ti.shape, d.u64())
		}
		ti.typ = d.u32()
		ti.offset = d.u64()
		g.infos = append(g.infos, ti)
	}
	g.dataOffset = uint64(d.off) + pad(uint64(d.off))
	return g
}

// tensor decodes one tensor's values.
func (g *gguf) tensor(t *testing.T, ti tensorInfo) []float32 {
	t.Helper()
	n := uint64(1)
	for _, s := range ti.shape {
		n *= s
	}
	start := g.dataOffset + ti.offset
	out := make([]float32, n)
	switch ti.typ {
	case ggmlF32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(g.raw[start+4*uint64(i):]))
		}
	case ggmlF16:
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(g.raw[start+2*uint64(i):]))
		}
	default:
		t.Fatalf("tensor %s: type %d", ti.name, ti.typ)
	}
	return out
}

func (g *gguf) tensors(t *testing.T) map[string][]float32 {
	m := map[string][]float32{}
	for _, ti := range g.infos {
		m[ti.name] = g.tensor(t, ti)
	}
	return m
}

var tinyConfig = Config{Layers: 2, Embd: 64, Heads: 4, KVHeads: 2, FF: 128, Context: 4096, Seed: 1, F16: true}

func build(t *testing.T, c Config, v *Vocab) []byte {
	t.Helper()
	kvs, ts := Build(c, v)
	var buf bytes.Buffer
	if err := writeGGUF(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriterRoundTrip(t *testing.T) {
	kvs := []KV{
		{"a.u32", uint32(7)}, {"a.i32", int32(-3)}, {"a.u64", uint64(1 << 40)}, {"a.f32", float32(0.5)},
		{"a.bool", true}, {"a.str", "héllo"}, {"a.strs", []string{"x", "", "yz"}},
		{"a.i32s", []int32{1, -2}}, {"a.f32s", []float32{1.5}},
	}
	ts := []Tensor{
		{Name: "odd", Shape: []uint64{3}, Type: ggmlF32, Data: []float32{1, 2, 3}},                     // 12 bytes: next needs padding
		{Name: "half", Shape: []uint64{5, 1}, Type: ggmlF16, Data: []float32{0, -1, 0.5, 65504, 1e-7}}, // 10 bytes
		{Name: "last", Shape: []uint64{2, 2}, Type: ggmlF32, Data: []float32{-1, 0, 1, 2}},
	}
	var buf bytes.Buffer
	if err := writeGGUF(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	g := readGGUF(t, buf.Bytes())
	if g.version != 3 {
		t.Errorf("version %d, want 3", g.version)
	}
	want := map[string]any{
		"a.u32": uint32(7), "a.i32": int32(-3), "a.u64": uint64(1 << 40), "a.f32": float32(0.5),
		"a.bool": true, "a.str": "héllo", "a.strs": []any{"x", "", "yz"},
		"a.i32s": []any{int32(1), int32(-2)}, "a.f32s": []any{float32(1.5)},
	}
	for _, kv := range kvs {
		if got := fmt.Sprint(g.kv[kv.Key]); got != fmt.Sprint(want[kv.Key]) {
			t.Errorf("%s = %v (%T), want %v", kv.Key, g.kv[kv.Key], g.kv[kv.Key], want[kv.Key])
		}
	}
	if !slices.Equal(g.keys, []string{"a.u32", "a.i32", "a.u64", "a.f32", "a.bool", "a.str", "a.strs", "a.i32s", "a.f32s"}) {
		t.Errorf("key order %v", g.keys)
	}
	if g.dataOffset%alignment != 0 {
		t.Errorf("data section at %d, not %d-aligned", g.dataOffset, alignment)
	}
	wantOff := []uint64{0, 32, 64}
	for i, ti := range g.infos {
		if ti.name != ts[i].Name || !slices.Equal(ti.shape, ts[i].Shape) || ti.typ != ts[i].Type {
			t.Errorf("tensor %d: %+v, want %s %v type %d", i, ti, ts[i].Name, ts[i].Shape, ts[i].Type)
		}
		if ti.offset != wantOff[i] {
			t.Errorf("tensor %s at offset %d, want %d", ti.name, ti.offset, wantOff[i])
		}
		got := g.tensor(t, ti)
		for j, v := range ts[i].Data {
			if ti.typ == ggmlF16 && math.Abs(float64(got[j]-v)) > 1e-3*math.Abs(float64(v))+1e-7 {
				t.Errorf("%s[%d] = %g, want ≈ %g", ti.name, j, got[j], v)
			}
			if ti.typ == ggmlF32 && got[j] != v {
				t.Errorf("%s[%d] = %g, want %g", ti.name, j, got[j], v)
			}
		}
	}
	// The file ends right after the last tensor, padded to the alignment.
	if end := g.dataOffset + 64 + 16 + pad(16); uint64(len(g.raw)) != end {
		t.Errorf("file is %d bytes, want %d", len(g.raw), end)
	}
}

func TestWriterRejects(t *testing.T) {
	ts := []Tensor{
		{Name: "a", Shape: []uint64{2}, Type: ggmlF32, Data: []float32{1}},
		{Name: "a", Shape: []uint64{1}, Type: 8, Data: []float32{1}},
		{Name: "b", Shape: nil, Type: ggmlF32},
	}
	err := writeGGUF(io.Discard, nil, ts)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"1 values for shape [2]", "duplicate name", "unsupported ggml type 8", `"b": 0 dimensions`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := writeGGUF(io.Discard, []KV{{"k", 1.5}}, nil); err == nil || !strings.Contains(err.Error(), `"k": unsupported value type float64`) {
		t.Errorf("float64 metadata: %v", err)
	}
}

func TestF16(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800},
		{65504, 0x7bff}, {70000, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{6.103515625e-05, 0x0400},       // smallest normal
		{1 + 1.0/2048, 0x3c00},          // halfway: ties to even (down)
		{1 + 3.0/2048, 0x3c02},          // halfway: ties to even (up)
		{-100, 0xd640},
	}
	for _, c := range cases {
		if got := f32ToF16(c.f); got != c.h {
			t.Errorf("f32ToF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	// Every finite half survives the round trip.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 {
			continue
		}
		if got := f32ToF16(f16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("round trip %#04x -> %g -> %#04x", h, f16ToF32(uint16(h)), got)
		}
	}
}

func TestModelMetadataAndShapes(t *testing.T) {
	v := syntheticVocab()
	g := readGGUF(t, build(t, tinyConfig, v))
	for k, want := range map[string]any{
		"general.architecture":          "llama",
		"general.file_type":             uint32(1),
		"llama.block_count":             uint32(2),
		"llama.embedding_length":        uint32(64),
		"llama.attention.head_count_kv": uint32(2),
		"llama.rope.dimension_count":    uint32(16),
		"tokenizer.ggml.model":          "gpt2",
		"tokenizer.ggml.pre":            "llama-bpe",
		"tokenizer.ggml.eos_token_id":   uint32(v.find("<|eot_id|>")),
	} {
		if fmt.Sprint(g.kv[k]) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", k, g.kv[k], want)
		}
	}
	toks := g.kv["tokenizer.ggml.tokens"].([]any)
	types := g.kv["tokenizer.ggml.token_type"].([]any)
	if len(toks) != len(v.Tokens) || len(types) != len(v.Tokens) {
		t.Fatalf("%d tokens, %d types, want %d", len(toks), len(types), len(v.Tokens))
	}
	if len(g.infos) != 2+9*2+1 {
		t.Errorf("%d tensors, want %d", len(g.infos), 2+9*2+1)
	}
	nv := uint64(len(v.Tokens))
	shapes := map[string][]uint64{
		"token_embd.weight": {64, nv}, "output.weight": {64, nv}, "output_norm.weight": {64},
		"blk.1.attn_k.weight": {64, 32}, "blk.1.ffn_down.weight": {128, 64}, "blk.0.ffn_gate.weight": {64, 128},
	}
	for _, ti := range g.infos {
		if ti.offset%alignment != 0 {
			t.Errorf("%s at offset %d, not aligned", ti.name, ti.offset)
		}
		if want, ok := shapes[ti.name]; ok && !slices.Equal(ti.shape, want) {
			t.Errorf("%s shape %v, want %v", ti.name, ti.shape, want)
		}
		if wantType := map[bool]uint32{true: ggmlF32, false: ggmlF16}[len(ti.shape) == 1]; ti.typ != wantType {
			t.Errorf("%s type %d, want %d", ti.name, ti.typ, wantType)
		}
	}
}

// TestSuppressedTokensNeverWin runs the model forward (from the values as stored, f16
// rounding included) for every input token and checks that each suppressed token's logit
// sits far below the best token's: with temperature sampling they have no chance.
func TestSuppressedTokensNeverWin(t *testing.T) {
	v := syntheticVocab()
	tensors := readGGUF(t, build(t, tinyConfig, v)).tensors(t)
	minGap := math.Inf(1)
	for tok := range v.Tokens {
		logits := forward(tinyConfig, tensors, tok)
		best, worstSuppressed := math.Inf(-1), math.Inf(-1)
		for id, l := range logits {
			if v.Suppressed(id) {
				worstSuppressed = max(worstSuppressed, l)
			} else {
				best = max(best, l)
			}
		}
		minGap = min(minGap, best-worstSuppressed)
	}
	if minGap < 100 {
		t.Errorf("a suppressed token's logit is only %.1f below the best one; want >= 100", minGap)
	}
	t.Logf("suppressed tokens are at least %.0f logits below the best", minGap)
}

// TestSuppressionLayout checks, on the large Llama 3 vocabulary, the structure the forward
// pass above relies on (a full forward pass over 128 K logits is too slow under -race):
// the carrier is constant in every embedding, untouched by the layers, and only suppressed
// tokens have a (negative) output weight on it.
func TestSuppressionLayout(t *testing.T) {
	v := llama3Vocab(t)
	_, ts := Build(tinyConfig, v)
	ne := tinyConfig.Embd
	for _, tn := range ts {
		switch {
		case tn.Name == "token_embd.weight":
			for tok := range len(v.Tokens) {
				if tn.Data[tok*ne+carrier] != carrierValue {
					t.Fatalf("token %d: embedding carrier %g", tok, tn.Data[tok*ne+carrier])
				}
			}
		case strings.HasSuffix(tn.Name, "attn_output.weight") || strings.HasSuffix(tn.Name, "ffn_down.weight"):
			in := int(tn.Shape[0])
			for i, w := range tn.Data[carrier*in : (carrier+1)*in] {
				if w != 0 {
					t.Fatalf("%s writes %g from input %d to the carrier", tn.Name, w, i)
				}
			}
		case tn.Name == "output.weight":
			for tok := range len(v.Tokens) {
				row := tn.Data[tok*ne : (tok+1)*ne]
				if v.Suppressed(tok) {
					if row[carrier] != suppressWeight || slices.ContainsFunc(row[carrier+1:], func(w float32) bool { return w != 0 }) {
						t.Fatalf("suppressed token %d (%q): output row %v", tok, v.Tokens[tok], row[:4])
					}
				} else if row[carrier] != 0 {
					t.Fatalf("token %d (%q): output weight %g on the carrier", tok, v.Tokens[tok], row[carrier])
				}
			}
		}
	}
}

// TestOutputVaries guards against the opposite failure: one token dominating every
// position, which temperature sampling would still repeat until Ollama aborts.
func TestOutputVaries(t *testing.T) {
	v := syntheticVocab()
	tensors := readGGUF(t, build(t, tinyConfig, v)).tensors(t)
	argmaxes := map[int]bool{}
	for tok := 0; tok < len(v.Tokens); tok += 7 {
		logits := forward(tinyConfig, tensors, tok)
		argmaxes[slices.Index(logits, slices.Max(logits))] = true
	}
	if len(argmaxes) < 20 {
		t.Errorf("only %d distinct most-likely next tokens over the vocabulary", len(argmaxes))
	}
}

func TestSyntheticVocab(t *testing.T) {
	v := syntheticVocab()
	if len(v.Tokens) != 256+26+26*26+5 {
		t.Errorf("%d tokens", len(v.Tokens))
	}
	for _, m := range v.Merges {
		l, r, _ := strings.Cut(m, " ")
		if v.find(l) < 0 || v.find(r) < 0 || v.find(l+r) < 0 {
			t.Errorf("merge %q has a part or result outside the vocabulary", m)
		}
	}
	for _, c := range []struct {
		tok  string
		supp bool
	}{
		{"a", false}, {"Ġq", false}, {"zz", false}, {"Ġ", true}, {"Ċ", true}, {string(byteEncoder[0xC3]), true},
		{"<|eot_id|>", true}, {"<|begin_of_text|>", true}, {"<", true},
	} {
		id := v.find(c.tok)
		if id < 0 {
			t.Fatalf("token %q is not in the vocabulary", c.tok)
		}
		if got := v.Suppressed(id); got != c.supp {
			t.Errorf("Suppressed(%q) = %v, want %v", c.tok, got, c.supp)
		}
	}
}

var (
	llama3Once sync.Once
	llama3     *Vocab
	llama3Err  error
)

// llama3Vocab loads the committed Llama 3 tokenizer (internal/tokenizer's test data) once
// for all tests.
func llama3Vocab(t *testing.T) *Vocab {
	t.Helper()
	const path = "../../internal/tokenizer/testdata/llama3/tokenizer.json.gz"
	llama3Once.Do(func() { llama3, llama3Err = loadTokenizerJSON(path) })
	if llama3Err != nil {
		t.Fatal(llama3Err)
	}
	return llama3
}

func TestLlama3Tokenizer(t *testing.T) {
	v := llama3Vocab(t)
	if len(v.Tokens) != 128256 || v.BOS != 128000 || v.EOS != 128009 || len(v.Merges) != 280147 {
		t.Errorf("tokens %d bos %d eos %d merges %d", len(v.Tokens), v.BOS, v.EOS, len(v.Merges))
	}
	for _, c := range []struct {
		tok  string
		supp bool
	}{
		{"Hello", false}, {"ĠHello", false}, {"Ġ", true}, {"ĊĊ", true}, {"<|eot_id|>", true},
		{"Ã", true},   // the lead byte of a two-byte character, alone
		{"Ã©", false}, // "é"
		{"Ġ<<", true}, {"<", true}, {"Ġ>>", false},
	} {
		id := v.find(c.tok)
		if id < 0 {
			t.Fatalf("token %q is not in the vocabulary", c.tok)
		}
		if got := v.Suppressed(id); got != c.supp {
			t.Errorf("Suppressed(%q) = %v, want %v", c.tok, got, c.supp)
		}
	}
}

func TestLoadTokenizerJSONErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := loadTokenizerJSON(write("wp.json", `{"model":{"type":"WordPiece"}}`)); err == nil || !strings.Contains(err.Error(), `"WordPiece", want BPE`) {
		t.Errorf("WordPiece: %v", err)
	}
	_, err := loadTokenizerJSON(write("bare.json", `{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b"]]}}`))
	if err == nil || !strings.Contains(err.Error(), "no <|begin_of_text|>") || !strings.Contains(err.Error(), "<|start_header_id|> missing") {
		t.Errorf("no specials: %v", err)
	}
	v, err := loadTokenizerJSON(write("pairs.json", `{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]},
		"added_tokens":[{"id":3,"content":"<|begin_of_text|>","special":true},{"id":4,"content":"<|eot_id|>","special":true},
		{"id":5,"content":"<|start_header_id|>","special":true},{"id":7,"content":"<|end_header_id|>","special":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Merges, []string{"a b"}) || v.Tokens[6] != "[PAD6]" || v.Types[6] != tokUnused || v.Types[3] != tokControl {
		t.Errorf("merges %q tokens %q types %v", v.Merges, v.Tokens, v.Types)
	}
}

func TestDeterministicAndCLI(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, args ...string) []byte {
		out := filepath.Join(dir, name)
		var log bytes.Buffer
		if err := run(append([]string{"-out", out}, args...), &log); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "vocab 963 (") {
			t.Errorf("summary %q", log.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := gen("a.gguf"), gen("b.gguf"), gen("c.gguf", "-seed", "2")
	if !bytes.Equal(a, b) {
		t.Error("same flags, different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same file")
	}
	f32 := gen("d.gguf", "-type", "f32")
	if len(f32) <= len(a) {
		t.Errorf("f32 file %d bytes, f16 %d", len(f32), len(a))
	}
	err := run([]string{"-out", filepath.Join(dir, "x"), "-embd", "30", "-heads", "4", "-kv-heads", "3", "-layers", "0", "-type", "q4"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "q4") {
		t.Errorf("bad type: %v", err)
	}
	err = run([]string{"-out", filepath.Join(dir, "x"), "-embd", "30", "-heads", "4", "-kv-heads", "3", "-layers", "0"}, io.Discard)
	for _, want := range []string{"layers must be > 0", "embd 30 is not a multiple of heads 4", "heads 4 is not a multiple of kv-heads 3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
