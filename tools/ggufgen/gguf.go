package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// GGUF v3, as specified in ggml's docs/gguf.md: little-endian header, metadata key/value
// pairs, tensor infos, padding to the alignment, then the tensor data, each tensor starting
// at an offset (relative to the data section) that is a multiple of the alignment.
const (
	ggufMagic   = 0x46554747 // "GGUF" read as a little-endian uint32
	ggufVersion = 3
	alignment   = 32 // general.alignment's default; we do not write the key
)

// Metadata value types.
const (
	typeUint8   uint32 = 0
	typeInt8    uint32 = 1
	typeUint16  uint32 = 2
	typeInt16   uint32 = 3
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
	typeUint64  uint32 = 10
	typeInt64   uint32 = 11
	typeFloat64 uint32 = 12
)

// ggml tensor types we write.
const (
	ggmlF32 uint32 = 0
	ggmlF16 uint32 = 1
)

// KV is one metadata pair. Value is one of uint32, int32, float32, bool, string, uint64,
// []string, []int32 or []float32; anything else is rejected when the file is written.
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor. Shape is in ggml order (Shape[0] is the contiguous dimension, the
// number of columns of a row-major matrix). Data holds product(Shape) values, stored as
// Type (ggmlF32 or ggmlF16).
type Tensor struct {
	Name  string
	Shape []uint64
	Type  uint32
	Data  []float32
}

func (t Tensor) elems() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

func (t Tensor) size() uint64 {
	switch t.Type {
	case ggmlF16:
		return 2 * t.elems()
	default:
		return 4 * t.elems()
	}
}

func pad(n uint64) uint64 { return (alignment - n%alignment) % alignment }

// writeGGUF writes a complete GGUF v3 file. It validates every tensor first so a bad
// tensor never leaves a half-written file behind the caller's back.
func writeGGUF(w io.Writer, kvs []KV, tensors []Tensor) error {
	var errs []error
	seen := map[string]bool{}
	for _, t := range tensors {
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("tensor %q: duplicate name", t.Name))
		}
		seen[t.Name] = true
		if len(t.Shape) == 0 || len(t.Shape) > 4 {
			errs = append(errs, fmt.Errorf("tensor %q: %d dimensions, want 1 to 4", t.Name, len(t.Shape)))
		}
		if t.Type != ggmlF32 && t.Type != ggmlF16 {
			errs = append(errs, fmt.Errorf("tensor %q: unsupported ggml type %d", t.Name, t.Type))
		}
		if uint64(len(t.Data)) != t.elems() {
			errs = append(errs, fmt.Errorf("tensor %q: %d values for shape %v (%d elements)", t.Name, len(t.Data), t.Shape, t.elems()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	e := &enc{w: cw}
	e.u32(ggufMagic)
	e.u32(ggufVersion)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.value(kv.Key, kv.Value)
	}
	var off uint64
	for _, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(d)
		}
		e.u32(t.Type)
		e.u64(off)
		off += t.size()
		off += pad(off)
	}
	e.zeros(pad(cw.n))
	for _, t := range tensors {
		switch t.Type {
		case ggmlF16:
			for _, v := range t.Data {
				e.u16(f32ToF16(v))
			}
		default:
			for _, v := range t.Data {
				e.u32(math.Float32bits(v))
			}
		}
		e.zeros(pad(t.size()))
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// enc keeps the first error so the writer reads as a straight sequence of fields.
type enc struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *enc) write(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *enc) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:2], v); e.write(e.buf[:2]) }
func (e *enc) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:4], v); e.write(e.buf[:4]) }
func (e *enc) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:8], v); e.write(e.buf[:8]) }
func (e *enc) str(s string) { e.u64(uint64(len(s))); e.write([]byte(s)) }
func (e *enc) zeros(n uint64) {
	if n > 0 {
		e.write(make([]byte, n))
	}
}

func (e *enc) value(key string, v any) {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case uint64:
		e.u32(typeUint64)
		e.u64(v)
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		if v {
			e.write([]byte{1})
		} else {
			e.write([]byte{0})
		}
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(math.Float32bits(x))
		}
	default:
		if e.err == nil {
			e.err = fmt.Errorf("metadata %q: unsupported value type %T", key, v)
		}
	}
}

// f32ToF16 converts to IEEE 754 half precision, rounding to nearest even; values beyond
// the half range become ±Inf. Our weights are small, so subnormals matter little, but they
// are handled.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff == 0:
		return sign
	case b>>23&0xff == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(h)
}

// f16ToF32 is the inverse, used by the tests and by the model self-check.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: mant × 2^-24
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
