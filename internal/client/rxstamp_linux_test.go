package client

import (
	"context"
	"io"
	"net"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/llmbench/llmbench/internal/record"
)

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, syscall.CmsgSpace(len(data)))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(syscall.CmsgLen(len(data)))
	copy(b[syscall.CmsgLen(0):], data)
	return b
}

func TestParseRxStamp(t *testing.T) {
	ts := syscall.NsecToTimespec(1_780_000_000_123_456_789)
	tsBytes := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
	stamp := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, tsBytes)
	other := cmsg(syscall.SOL_IP, 8, []byte{1, 2, 3, 4}) // IP_TTL-like, before it
	for _, c := range []struct {
		name string
		b    []byte
		want int64
	}{
		{"stamp", stamp, 1_780_000_000_123_456_789},
		{"after another message", append(append([]byte{}, other...), stamp...), 1_780_000_000_123_456_789},
		{"none", nil, 0},
		{"another message only", other, 0},
		{"truncated", stamp[:len(stamp)-4], 0},
		{"short header", stamp[:syscall.SizeofCmsghdr-1], 0},
	} {
		if got := parseRxStamp(c.b); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// The point of kernel stamps, on a real socket and real time: bytes that wait 150 ms for
// the reader keep the time they arrived, and their age is the wait.
func TestKernelStampIsArrivalNotRead(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wrote := make(chan time.Time, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("event"))
		wrote <- time.Now()
		c.Read(make([]byte, 1)) // until the client closes
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := wrapRx(raw)
	defer conn.Close()
	rc := rxConnOf(conn)
	if rc == nil {
		t.Fatal("wrapRx did not wrap a TCP connection")
	}
	w := <-wrote
	time.Sleep(150 * time.Millisecond) // the client is late
	if n, err := conn.Read(make([]byte, 16)); n != 5 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	at, age, ok := rc.stamp()
	if !ok {
		// gVisor and some other sandboxes accept SO_TIMESTAMPNS but never deliver it;
		// the client then stamps at read time, which the other tests cover.
		t.Skip("this kernel delivers no receive timestamps")
	}
	// Arrival precedes the server's post-write reading by the rest of its write call; a
	// loaded machine can delay either side's clock reading, hence the wide margins.
	if d := at.Sub(w); d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Errorf("stamp %v from the write, want within ±50ms", d)
	}
	if age < 100*time.Millisecond || age > 5*time.Second {
		t.Errorf("age %v, want about the 150 ms the bytes waited", age)
	}
	if got := rxConnOf(conn); got != rc {
		t.Error("rxConnOf is not stable")
	}
}

// Do over real TCP stamps events in the kernel and notes the read lag; ReadStamps and
// HTTP/1-over-pipe connections do not.
func TestDoKernelStamps(t *testing.T) {
	srv := httptest.NewServer(scripted(tokenStream(5*time.Millisecond, 5*time.Millisecond, 4)...))
	defer srv.Close()
	for _, readStamps := range []bool{false, true} {
		c, err := New(Config{BaseURL: srv.URL, API: APIOpenAIChat, ReadStamps: readStamps})
		if err != nil {
			t.Fatal(err)
		}
		c.transport.Proxy = nil
		var rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &rec)
		c.Close()
		if rec.Error != nil || rec.Events.Len() != 4 {
			t.Fatalf("read stamps %v: error %+v, %d events", readStamps, rec.Error, rec.Events.Len())
		}
		if !readStamps && !rec.KernelStamps && rec.Error == nil {
			t.Log("no kernel stamps on this kernel; see TestKernelStampIsArrivalNotRead")
			continue
		}
		if rec.KernelStamps == readStamps {
			t.Errorf("read stamps %v: KernelStamps %v", readStamps, rec.KernelStamps)
		}
		if rec.ReadLag < 0 || rec.ReadLag > 5*time.Second || (readStamps && rec.ReadLag != 0) {
			t.Errorf("read stamps %v: read lag %v", readStamps, rec.ReadLag)
		}
		if ft, _ := rec.FirstToken(); ft < rec.Sent {
			t.Errorf("read stamps %v: first token %v before sent %v", readStamps, ft, rec.Sent)
		}
	}
}

// An armed connection notes when its next request's first byte was written, once.
func TestRxConnWriteStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rc := rxConnOf(wrapRx(raw))
	if rc == nil {
		t.Fatal("not wrapped")
	}
	defer rc.Close()
	rc.Write([]byte("before arming"))
	if _, ok := rc.writeStart(); ok {
		t.Error("a write before arm was noted")
	}
	rc.arm()
	before := time.Now()
	rc.Write([]byte("POST / HTTP/1.1\r\n"))
	first, ok := rc.writeStart()
	if !ok || first.Before(before) || time.Since(first) > time.Minute {
		t.Fatalf("write start %v (ok %v), armed at %v", first, ok, before)
	}
	time.Sleep(2 * time.Millisecond)
	rc.Write([]byte("body"))
	if again, _ := rc.writeStart(); !again.Equal(first) {
		t.Errorf("a later write of the same request moved the start from %v to %v", first, again)
	}
	rc.arm()
	if _, ok := rc.writeStart(); ok {
		t.Error("re-arming kept the previous request's start")
	}
}
