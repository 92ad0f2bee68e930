package record

import (
	"os"
	"sync"
)

// Writer appends records to a records.jsonl file as requests finish, one write(2) per
// line, so a killed process still leaves complete lines behind. Safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
	err error
}

// Create opens path for appending records, truncating any previous file.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends r. The first error sticks and is returned by every later call and by Close.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = append(AppendJSON(w.buf[:0], r), '\n')
	_, w.err = w.f.Write(w.buf)
	return w.err
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}
