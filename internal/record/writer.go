package record

import (
	"os"
	"sync"
	"time"
)

// FlushInterval bounds how long a finished request's record waits in memory before it is
// appended to the file.
const FlushInterval = 50 * time.Millisecond

// flushSize triggers an early flush when this many bytes are pending.
const flushSize = 256 << 10

// Writer appends records to a records.jsonl file as requests finish. Encoding happens in
// the caller (a request's own goroutine) without a system call; a background goroutine
// appends whole lines every FlushInterval, so the load generator's workers never wait on
// the disk, and a killed process leaves only complete lines, missing at most the last
// FlushInterval. Safe for concurrent use.
type Writer struct {
	compact bool // records.bin (AppendCompact), else records.jsonl lines
	mu      sync.Mutex
	f       *os.File
	pending []byte
	spare   []byte
	err     error
	kick    chan struct{}
	done    chan struct{}
	closed  bool
}

// Create opens path for appending records, truncating any previous file, in the format its
// name says (FormatOf: records.bin is compact, anything else JSONL).
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, kick: make(chan struct{}, 1), done: make(chan struct{}), compact: FormatOf(path) == FormatCompact}
	if w.compact {
		w.pending = append(w.pending, compactMagic...)
	}
	go w.loop()
	return w, nil
}

// WriteFile writes recs as a new records file at path (a merged run's, a test's), in the
// format its name says.
func WriteFile(path string, recs []Record) error {
	w, err := Create(path)
	if err != nil {
		return err
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			break // sticky: Close reports it
		}
	}
	return w.Close()
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case _, ok := <-w.kick:
			if !ok {
				return
			}
		}
		w.flush()
	}
}

// flush appends the pending lines in one write.
func (w *Writer) flush() {
	w.mu.Lock()
	buf := w.pending
	w.pending = w.spare[:0]
	w.mu.Unlock()
	if len(buf) == 0 {
		w.spare = buf
		return
	}
	_, err := w.f.Write(buf)
	w.mu.Lock()
	if err != nil && w.err == nil {
		w.err = err
	}
	w.spare = buf[:0]
	w.mu.Unlock()
}

// Write queues r. The first write error sticks and is returned by every later call and by
// Close.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.compact {
		w.pending = AppendCompact(w.pending, r)
	} else {
		w.pending = append(AppendJSON(w.pending, r), '\n')
	}
	if len(w.pending) >= flushSize && !w.closed {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Close writes what is pending, syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	w.mu.Unlock()
	close(w.kick)
	<-w.done
	w.flush()
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
