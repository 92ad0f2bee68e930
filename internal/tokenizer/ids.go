package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// LineError is a line of EncodeJSONLines' input that is not a JSON string.
type LineError struct {
	Line int // from 1
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d: not a JSON string: %v", e.Line, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// WriteIDs writes ids as a JSON array of numbers, ending in a newline.
func WriteIDs(w io.Writer, ids []int) error {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	_, err := w.Write(append(b, ']', '\n'))
	return err
}

// EncodeText encodes all of r as one text with tok, writing its ids to w as WriteIDs does.
func EncodeText(w io.Writer, r io.Reader, tok Tokenizer) error {
	text, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	WriteIDs(w, tok.Encode(string(text)))
	return nil
}

// EncodeJSONLines encodes each line of r, a JSON string, with tok, writing its ids to w as
// WriteIDs does: one array a line.
func EncodeJSONLines(w io.Writer, r io.Reader, tok Tokenizer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return &LineError{Line: line, Err: err}
		}
		WriteIDs(w, tok.Encode(s))
	}
	return sc.Err()
}
