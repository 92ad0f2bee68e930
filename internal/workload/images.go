package workload

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // checkImageFile
	"image/jpeg"
	"image/png"
	"os"
	"strconv"
	"strings"
)

// Image is one image of a request, as it is sent: a data URL of the encoded image.
type Image struct {
	URL           string // data:image/png;base64,… or data:image/jpeg;base64,…
	Bytes         int    // the encoded image's size (before base64)
	Width, Height int
}

// ImageConfig adds N synthetic images of Width × Height pixels to every request, encoded
// as Format ("png" or "jpeg"), deterministic in (Seed, level, index, image).
type ImageConfig struct {
	N             int
	Width, Height int
	Format        string
	Seed          int64
}

// ParseImageSize reads an image size, ImageConfig's Width and Height: "WxH", each 1..8192
// pixels.
func ParseImageSize(s string) (w, h int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	w, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || w < 1 || h < 1 || w > 8192 || h > 8192 {
		return 0, 0, fmt.Errorf("%q must be WxH with each side 1..8192 pixels, e.g. 512x512", s)
	}
	return w, h, nil
}

// Validate reports a bad image configuration.
func (c ImageConfig) Validate() error {
	if c.N < 0 || c.N > 64 {
		return fmt.Errorf("images: %d per request; want 0..64", c.N)
	}
	if c.Format != "png" && c.Format != "jpeg" {
		return fmt.Errorf("image format %q: want png or jpeg", c.Format)
	}
	return nil
}

// checkImageFile makes sure a dataset's image file is a PNG, JPEG or GIF image.
func checkImageFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, err := image.DecodeConfig(f); err != nil {
		return fmt.Errorf("not a PNG, JPEG or GIF image (%v)", err)
	}
	return nil
}

// imageFile is a dataset's image file as it is sent (read at each request, so a large
// dataset's images are not all held in memory; checkImageFile vetted it at load).
func imageFile(path string) Image {
	b, err := os.ReadFile(path)
	if err != nil {
		return Image{URL: "data:,", Bytes: 0} // gone since the load: the server will say so
	}
	c, format, _ := image.DecodeConfig(bytes.NewReader(b))
	return Image{URL: "data:image/" + format + ";base64," + base64.StdEncoding.EncodeToString(b),
		Bytes: len(b), Width: c.Width, Height: c.Height}
}

// WithImages adds cfg.N images to every request of src.
func WithImages(src Source, cfg ImageConfig) Source { return &imaged{src: src, cfg: cfg} }

type imaged struct {
	src Source
	cfg ImageConfig
}

func (m *imaged) Request(level, i int) Request {
	r := m.src.Request(level, i)
	for k := range m.cfg.N {
		r.Images = append(r.Images, SyntheticImage(m.cfg, uint64(level)<<40^uint64(i)<<8^uint64(k)))
	}
	return r
}

func (m *imaged) Len() int   { return m.src.Len() }
func (m *imaged) Info() Info { return Describe(m.src) }

// SyntheticImage draws image key of cfg: 16 × 16-pixel blocks of seeded colours (distinct
// per image, so no cache of image features flatters a run, and compressible, like photos
// more than noise), encoded as cfg.Format.
func SyntheticImage(cfg ImageConfig, key uint64) Image {
	img := image.NewRGBA(image.Rect(0, 0, cfg.Width, cfg.Height))
	seed := mix64(streamKey(cfg.Seed, purposeImage, int64(key)))
	const block = 16
	for by := 0; by < cfg.Height; by += block {
		for bx := 0; bx < cfg.Width; bx += block {
			v := mix64(seed ^ uint64(by)<<32 ^ uint64(bx))
			c := color.RGBA{R: uint8(v), G: uint8(v >> 8), B: uint8(v >> 16), A: 255}
			for y := by; y < min(by+block, cfg.Height); y++ {
				for x := bx; x < min(bx+block, cfg.Width); x++ {
					img.SetRGBA(x, y, c)
				}
			}
		}
	}
	var buf bytes.Buffer
	mime := "image/png"
	if cfg.Format == "jpeg" {
		mime = "image/jpeg"
		_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	} else {
		_ = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
	}
	return Image{URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(buf.Bytes()),
		Bytes: buf.Len(), Width: cfg.Width, Height: cfg.Height}
}
