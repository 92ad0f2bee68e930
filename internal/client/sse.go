package client

import (
	"bytes"
	"io"
	"time"
)

// sseReader splits a text/event-stream body into events, our own implementation rather
// than a library because the measurement depends on two things libraries do not offer:
// every event is stamped with the time its bytes came off the socket (time.Now() right
// after the Read that completed it, shared by all events completed by that Read), and
// there is no line-length cap (vllm#39963: a 64 KB cap is a real failure mode).
//
// It handles several events per Read, one event across Reads, "data:" with or without
// the space, comment lines (": keep-alive"), "event:" names, LF and CRLF line ends, and a
// last event that the server did not terminate with a blank line before closing.
// The slices it returns are valid until the next call to Next.
type sseReader struct {
	r   io.Reader
	now func() time.Time
	// idle, when set, is told the time of every Read that returned bytes.
	idle *idleWatch

	buf      []byte // read buffer; buf[pos:end] is not yet consumed
	pos, end int
	t        time.Time // when the latest Read returned
	tBytes   time.Time // when the latest Read that returned bytes returned
	err      error     // sticky error from the underlying reader
	data     []byte    // data of the event being assembled (lines joined by '\n')
	event    []byte    // event name of the event being assembled
	hasData  bool
	outData  []byte // the event handed out by the last Next (swapped with data)
	outEvent []byte
	scan     int  // buf[pos:scan] is known to hold no '\n' (no rescans of a long line)
	cut      bool // the stream ended in the middle of a line
}

const sseInitialBuf = 4096

func newSSEReader(r io.Reader, now func() time.Time) *sseReader {
	s := &sseReader{}
	s.reset(r, now)
	return s
}

// reset reuses s (and its buffers) for a new body.
func (s *sseReader) reset(r io.Reader, now func() time.Time) {
	if cap(s.buf) < sseInitialBuf || cap(s.buf) > 1<<20 {
		s.buf = make([]byte, sseInitialBuf)
	}
	s.buf = s.buf[:cap(s.buf)]
	s.r, s.now, s.idle = r, now, nil
	s.pos, s.end, s.scan = 0, 0, 0
	s.t, s.tBytes = time.Time{}, time.Time{}
	s.err = nil
	s.data, s.event, s.outData, s.outEvent = s.data[:0], s.event[:0], s.outData[:0], s.outEvent[:0]
	s.hasData = false
	s.cut = false
}

// Next returns the next event's data and event name (empty when none was given) with the
// time its last byte was read. At the end of the stream it returns io.EOF; a broken
// stream returns the underlying reader's error. Events without data lines are skipped,
// as the SSE specification says.
func (s *sseReader) Next() (data, event []byte, t time.Time, err error) {
	for {
		for s.pos < s.end {
			from := max(s.pos, s.scan)
			i := bytes.IndexByte(s.buf[from:s.end], '\n')
			if i < 0 {
				s.scan = s.end
				break
			}
			line := s.buf[s.pos : from+i]
			s.pos = from + i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if len(line) == 0 {
				if s.hasData {
					return s.dispatch()
				}
				s.event = s.event[:0]
				continue
			}
			s.field(line)
		}
		if s.err != nil {
			// A last line or event not terminated before a clean EOF is still taken:
			// servers that close right after the final data line exist, and a cut
			// connection shows up as a non-EOF error instead.
			if s.err == io.EOF {
				if s.pos < s.end {
					line := bytes.TrimSuffix(s.buf[s.pos:s.end], []byte{'\r'})
					s.pos = s.end
					s.cut = true
					if len(line) > 0 {
						s.field(line)
					}
				}
				if s.hasData {
					// Its bytes came with the last read that had any, not with the EOF.
					d, e, _, _ := s.dispatch()
					return d, e, s.tBytes, nil
				}
			}
			return nil, nil, s.t, s.err
		}
		s.fill()
	}
}

func (s *sseReader) dispatch() ([]byte, []byte, time.Time, error) {
	// Swap so the caller's slices stay valid while the next event is assembled.
	s.outData, s.data = s.data, s.outData[:0]
	s.outEvent, s.event = s.event, s.outEvent[:0]
	s.hasData = false
	return s.outData, s.outEvent, s.t, nil
}

// field processes one non-empty line.
func (s *sseReader) field(line []byte) {
	if line[0] == ':' { // comment / keep-alive
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	case "event":
		s.event = append(s.event[:0], value...)
	}
	// id:, retry: and unknown fields carry nothing we measure.
}

// fill reads more bytes, compacting or growing the buffer so that a line of any length fits.
func (s *sseReader) fill() {
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:s.end])
		s.scan = max(s.scan-s.pos, 0)
		s.pos, s.end = 0, n
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		if n > 0 || err != nil {
			s.t = s.now()
			if n > 0 {
				s.tBytes = s.t
				if s.idle != nil {
					s.idle.last.Store(int64(s.t.Sub(s.idle.base)))
				}
			}
		}
		s.end += n
		if err != nil {
			s.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	s.err = io.ErrNoProgress
}

// lineReader splits an NDJSON body (Ollama's native API) into lines with the same read-time
// stamping as sseReader.
type lineReader struct{ sseReader }

// Next returns the next non-empty line.
func (l *lineReader) Next() (line []byte, t time.Time, err error) {
	s := &l.sseReader
	for {
		for s.pos < s.end {
			from := max(s.pos, s.scan)
			i := bytes.IndexByte(s.buf[from:s.end], '\n')
			if i < 0 {
				s.scan = s.end
				break
			}
			line := bytes.TrimSpace(s.buf[s.pos : from+i])
			s.pos = from + i + 1
			if len(line) > 0 {
				return line, s.t, nil
			}
		}
		if s.err != nil {
			if s.err == io.EOF && s.pos < s.end {
				line := bytes.TrimSpace(s.buf[s.pos:s.end])
				s.pos = s.end
				s.cut = true
				if len(line) > 0 {
					return line, s.tBytes, nil
				}
			}
			return nil, s.t, s.err
		}
		s.fill()
	}
}
