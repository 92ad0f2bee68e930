// Command ggufgen writes a tiny random-weight Llama-architecture GGUF model, for running a
// real inference server (Ollama, llama.cpp) in CI without downloading weights.
//
// The model's output never contains control, EOS, partial-UTF-8 or blank tokens (their
// logits are hundreds below the rest; see model.go), so a server streams exactly
// max_tokens printable tokens. Sample it with temperature: greedy decoding of random
// weights repeats one token, and Ollama aborts a stream after 31 repeats.
//
//	go run ./tools/ggufgen -out model.gguf [-tokenizer internal/tokenizer/testdata/llama3/tokenizer.json.gz]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ggufgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ggufgen", flag.ContinueOnError)
	out := fs.String("out", "model.gguf", "output `file`")
	tokPath := fs.String("tokenizer", "", "byte-level BPE tokenizer.json (or .json.gz) with Llama 3 special tokens (e.g. internal/tokenizer/testdata/llama3/tokenizer.json.gz); empty: a made-up ~1000-token vocabulary")
	var c Config
	fs.IntVar(&c.Layers, "layers", 2, "transformer blocks")
	fs.IntVar(&c.Embd, "embd", 64, "hidden size")
	fs.IntVar(&c.Heads, "heads", 4, "attention heads")
	fs.IntVar(&c.KVHeads, "kv-heads", 2, "key/value heads (grouped-query attention)")
	fs.IntVar(&c.FF, "ff", 128, "feed-forward size")
	// Llama 3.1's: a server given -c beyond the training context caps each slot there, as no
	// real model of today's would make it.
	fs.IntVar(&c.Context, "ctx", 131072, "context length (training: llama.cpp caps a slot's context at it)")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed (the file is a pure function of the flags)")
	typ := fs.String("type", "f16", "matrix storage type: f16 or f32")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch *typ {
	case "f16":
		c.F16 = true
	case "f32":
	default:
		return fmt.Errorf("-type %q: want f16 or f32", *typ)
	}
	if err := c.Validate(); err != nil {
		return err
	}

	v := syntheticVocab()
	if *tokPath != "" {
		var err error
		if v, err = loadTokenizerJSON(*tokPath); err != nil {
			return err
		}
	}
	kvs, tensors := Build(c, v)

	// Write beside the target and rename, so a crash never leaves a truncated model that
	// a cache check would take for a good one.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".ggufgen-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeGGUF(tmp, kvs, tensors); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { // CreateTemp makes it 0600
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	suppressed := 0
	for id := range v.Tokens {
		if v.Suppressed(id) {
			suppressed++
		}
	}
	var params uint64
	for _, t := range tensors {
		params += t.elems()
	}
	fmt.Fprintf(stdout, "wrote %s: %.1f MB, %d parameters, %d layers, hidden %d, vocab %d (%d suppressed), %s\n",
		*out, float64(st.Size())/1e6, params, c.Layers, c.Embd, len(v.Tokens), suppressed, *typ)
	return nil
}
