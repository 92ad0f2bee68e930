package workload

import (
	"testing"

	"github.com/llmbench/llmbench/internal/tokenizer"
)

// BenchmarkRandomPrompt512: go test -bench RandomPrompt -run '^$' ./internal/workload/
func BenchmarkRandomPrompt512(b *testing.B) {
	for _, spec := range []string{"o200k_base", qwenPath, llama2Path} {
		tok, err := tokenizer.Load(spec)
		if err != nil {
			b.Fatal(err)
		}
		src, err := New(Config{InputTokens: Fixed(512), OutputTokens: Fixed(128), Seed: 1}, tok)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tok.Name(), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if r := src.Request(0, i); r.InputTokens != 512 {
					b.Fatalf("request %d has %d tokens", i, r.InputTokens)
				}
				i++
			}
		})
	}
}

func BenchmarkLengthsOnly(b *testing.B) {
	src, err := New(Config{InputTokens: Dist{Kind: "uniform", A: 100, B: 2000}, OutputTokens: Dist{Kind: "normal", A: 200, B: 50}, LengthsOnly: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		src.Request(0, i)
		i++
	}
}
