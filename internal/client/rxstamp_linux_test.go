package client

import (
	"context"
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
	write := make(chan struct{})
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		<-write
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
	stamps := rc.claim()
	// The kernel turns stamping on from a work queue once the first socket asks; give it
	// a moment, as a run's first events may come unstamped (and are then timed when read).
	time.Sleep(20 * time.Millisecond)
	close(write)
	w := <-wrote
	time.Sleep(150 * time.Millisecond) // the client is late
	if n, err := conn.Read(make([]byte, 16)); n != 5 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	at, _, age, ok := stamps.stamp()
	if !ok {
		// gVisor and some sandboxes accept SO_TIMESTAMPNS and never deliver it: llmbench
		// then times events when read, and should say so (run --read-stamps there).
		t.Fatal("no kernel receive timestamp: this kernel does not deliver SO_TIMESTAMPNS")
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
		start := time.Now()
		// The second request is the one checked: the kernel may take a moment to switch
		// stamping on for the first socket that asks (TestKernelStampIsArrivalNotRead).
		var rec record.Record
		for range 2 {
			rec = record.Record{}
			c.Do(context.Background(), start, testReq, &rec)
		}
		c.Close()
		if rec.Error != nil || rec.Events.Len() != 4 {
			t.Fatalf("read stamps %v: error %+v, %d events", readStamps, rec.Error, rec.Events.Len())
		}
		if rec.KernelStamps == readStamps {
			t.Errorf("read stamps %v: KernelStamps %v (a kernel that gives none fails TestKernelStampIsArrivalNotRead too)", readStamps, rec.KernelStamps)
		}
		if rec.ReadLag < 0 || rec.ReadLag > 5*time.Second || (readStamps && rec.ReadLag != 0) {
			t.Errorf("read stamps %v: read lag %v", readStamps, rec.ReadLag)
		}
		if ft, _ := rec.FirstToken(); ft < rec.Sent || rec.Sent <= 0 || rec.Done < ft {
			t.Errorf("read stamps %v: sent %v, first token %v, done %v", readStamps, rec.Sent, ft, rec.Done)
		}
	}
}

// A keep-alive connection passes to the next request while the previous one may still ask
// for the time of its last read: each keeps the stamps of its own reads.
func TestRxStampsFollowTheRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	next := make(chan bool)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for range next {
			c.Write([]byte("response"))
		}
	}()
	defer close(next)
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rc := rxConnOf(wrapRx(raw))
	if rc == nil {
		t.Fatal("not wrapped")
	}
	defer rc.Close()
	buf := make([]byte, 64)
	first := rc.claim()
	time.Sleep(20 * time.Millisecond) // stamping switches on from a work queue
	next <- true
	rc.Read(buf)
	t1, _, _, ok := first.stamp()
	if !ok {
		t.Fatal("no kernel receive timestamp")
	}
	time.Sleep(20 * time.Millisecond)
	second := rc.claim()
	next <- true
	rc.Read(buf)
	// (Each conversion reads the clocks anew: equal to the ns, give or take a few.)
	if again, _, _, _ := first.stamp(); again.Sub(t1).Abs() > time.Microsecond {
		t.Errorf("the first request's stamp moved from %v to %v with the second's read", t1, again)
	}
	if t2, _, _, ok := second.stamp(); !ok || t2.Sub(t1) < 10*time.Millisecond {
		t.Errorf("second request's stamp %v (ok %v), only %v after the first's", t2, ok, t2.Sub(t1))
	}
	// A read that fails (here: times out) is timed when read, not by older bytes.
	rc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := rc.Read(buf); err == nil {
		t.Fatal("read past the deadline succeeded")
	}
	if _, _, _, ok := second.stamp(); ok {
		t.Error("a failed read kept the previous stamp")
	}
}
