package server

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
)

// TestConfigLoad: Load reports every problem at once, each on the field at fault, and a
// good Config's options carry its settings over the profile's.
func TestConfigLoad(t *testing.T) {
	neg := -time.Second
	_, _, err := Config{Profile: "no-such-profile", Faults: "http500=2", Tokenizer: "server", ImagePatch: 0, ImageMerge: 2, CloseAfter: &neg}.Load()
	fields := fielderr.Fields(err)
	want := []string{"Profile", "Faults", "Tokenizer", "ImagePatch,ImageMerge,ImageEncode", "CloseAfter"}
	if !slices.Equal(fields, want) || !errors.Is(err, ErrServerTokenizer) {
		t.Fatalf("fields %v, want %v (err %v)", fields, want, err)
	}

	p, opts, err := Config{Profile: "textbook", Tokenizer: "o200k_base", Seed: 7, ModelName: "m", APIKey: "k", ImagePatch: 16, ImageMerge: 1, ImageEncode: time.Millisecond}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if p.Seed != 7 || opts.Seed != 7 || opts.ModelName != "m" || opts.APIKey != "k" || opts.Tokenizer == nil ||
		opts.ImagePatch != 16 || opts.ImageMerge != 1 || opts.ImageEncode != time.Millisecond {
		t.Fatalf("profile seed %d, options %+v", p.Seed, opts)
	}
	if _, opts, _ := (Config{Profile: "textbook", Tokenizer: "o200k_base", ImagePatch: 14, ImageMerge: 2}).Load(); opts.ModelName != p.ModelName() {
		t.Fatalf("model %q, want the profile's %q", opts.ModelName, p.ModelName())
	}
}
