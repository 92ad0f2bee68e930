package workload

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/jpeg"
	_ "image/png"
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
