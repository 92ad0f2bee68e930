package workload

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyntheticImages: images are decodable PNG or JPEG data URLs of the asked size,
// the same for the same (seed, level, index) and different otherwise.
func TestSyntheticImages(t *testing.T) {
	if w, h, err := ParseImageSize("640x480"); err != nil || w != 640 || h != 480 {
		t.Errorf("640x480: %d %d %v", w, h, err)
	}
	for _, bad := range []string{"640", "0x10", "10x", "9000x10", "axb"} {
		if _, _, err := ParseImageSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	src := &fixedSource{}
	for _, format := range []string{"png", "jpeg"} {
		cfg := ImageConfig{N: 2, Width: 100, Height: 60, Format: format, Seed: 7}
		s := WithImages(src, cfg)
		a, b := s.Request(0, 3), s.Request(0, 3)
		if len(a.Images) != 2 || a.Images[0].URL != b.Images[0].URL || a.Images[0].URL == a.Images[1].URL ||
			a.Images[0].URL == s.Request(1, 3).Images[0].URL {
			t.Fatalf("%s: not deterministic and distinct", format)
		}
		head, data, _ := strings.Cut(a.Images[0].URL, ",")
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil || head != "data:image/"+format+";base64" || len(raw) != a.Images[0].Bytes {
			t.Fatalf("%s: %q, %d bytes (%v)", format, head, len(raw), err)
		}
		c, got, err := image.DecodeConfig(bytes.NewReader(raw))
		if err != nil || got != format || c.Width != 100 || c.Height != 60 {
			t.Errorf("%s: decoded %s %dx%d (%v)", format, got, c.Width, c.Height, err)
		}
	}
}

type fixedSource struct{}

func (fixedSource) Request(level, i int) Request { return Request{Prompt: "p", InputTokens: 1} }
func (fixedSource) Len() int                     { return 0 }

// TestDatasetImages: a jsonl row's "images" are files beside the dataset, sent as data URLs;
// a file that is not an image stops the load with its line and name.
func TestDatasetImages(t *testing.T) {
	dir := t.TempDir()
	im := SyntheticImage(ImageConfig{Width: 30, Height: 20, Format: "png"}, 1)
	_, data, _ := strings.Cut(im.URL, ",")
	raw, _ := base64.StdEncoding.DecodeString(data)
	os.WriteFile(filepath.Join(dir, "a.png"), raw, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644)
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"prompt":"look at this","images":["a.png"]}`+"\n"), 0o644)
	tok := loadTok(t, "o200k_base")
	src, err := New(Config{Dataset: "jsonl:" + good, InputTokens: Fixed(1), OutputTokens: Fixed(4), Seed: 1}, tok)
	if err != nil {
		t.Fatal(err)
	}
	r := src.Request(0, 0)
	if len(r.Images) != 1 || r.Images[0].URL != im.URL || r.Images[0].Bytes != len(raw) || r.Images[0].Width != 30 {
		t.Errorf("images %+v", r.Images)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"prompt":"x"}`+"\n"+`{"prompt":"y","images":["notes.txt"]}`+"\n"), 0o644)
	_, err = New(Config{Dataset: "jsonl:" + bad, InputTokens: Fixed(1), OutputTokens: Fixed(4), Seed: 1}, tok)
	if err == nil || !strings.Contains(err.Error(), "2") || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "not a PNG, JPEG or GIF image") {
		t.Errorf("a text file as an image: %v", err)
	}
}
