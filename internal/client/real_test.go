package client

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/testtier"
)

var _ load.Target = (*Client)(nil)

// TestRealTiming runs over real TCP and the real clock: 4 concurrent streams, TTFT 60 ms,
// then a token every 15 ms. Tolerances are wide because the test machine is shared.
func TestRealTiming(t *testing.T) {
	testtier.Accuracy(t, "TTFT and TPOT over real TCP on the real clock")
	srv := httptest.NewServer(scripted(tokenStream(60*time.Millisecond, 15*time.Millisecond, 16)...))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, API: APIOpenAIChat, MaxConns: 4, IdleTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	var mu sync.Mutex
	var ttfts, itls []float64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2 {
				var rec record.Record
				c.Do(context.Background(), start, testReq, &rec)
				if rec.Error != nil {
					t.Errorf("error %+v", rec.Error)
					return
				}
				mu.Lock()
				ft, _ := rec.FirstToken()
				ttfts = append(ttfts, float64(ft-rec.Sent)/1e6)
				prev := ft
				rec.Events.Each(func(i int, at time.Duration, n int) {
					if i > 0 {
						itls = append(itls, float64(at-prev)/1e6/float64(n))
					}
					prev = at
				})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(ttfts)
	slices.Sort(itls)
	if len(ttfts) == 0 || len(itls) == 0 {
		t.Fatal("no samples")
	}
	ttft50, itl50 := ttfts[len(ttfts)/2], itls[len(itls)/2]
	t.Logf("TTFT P50 %.2f ms, ITL P50 %.2f ms; TTFTs %.1f", ttft50, itl50, ttfts)
	if ttft50 < 60 || ttft50 > 110 {
		t.Errorf("TTFT P50 %.2f ms, want 60 ms (+50 ms tolerance for a loaded machine)", ttft50)
	}
	if itl50 < 12 || itl50 > 20 {
		t.Errorf("ITL P50 %.2f ms, want 15 ms (-3/+5 ms tolerance)", itl50)
	}
}

func TestRealDisconnectAndRefused(t *testing.T) {
	srv := httptest.NewServer(scripted(step{time.Millisecond, data(roleChunk) + chatDelta("a")}, step{time.Millisecond, "HANGUP"}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL, API: APIOpenAIChat})
	defer c.Close()
	var rec record.Record
	c.Do(context.Background(), time.Now(), testReq, &rec)
	if rec.Error == nil || rec.Error.Kind != record.KindDisconnect || rec.Events.Len() != 1 {
		t.Errorf("error %+v with %d events, want disconnect after 1", rec.Error, rec.Events.Len())
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c2, _ := New(Config{BaseURL: "http://" + addr, API: APIOpenAIChat})
	rec = record.Record{}
	c2.Do(context.Background(), time.Now(), testReq, &rec)
	if rec.Error == nil || rec.Error.Kind != record.KindConnect {
		t.Errorf("error %+v, want connect", rec.Error)
	}
	if _, err := c2.ListModels(context.Background()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("ListModels error %v", err)
	}
}

func TestTLS(t *testing.T) {
	var protoMu sync.Mutex
	proto := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protoMu.Lock()
		proto = r.ProtoMajor
		protoMu.Unlock()
		scripted(tokenStream(time.Millisecond, time.Millisecond, 3)...)(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	caFile := writeCA(t, srv)
	for _, tc := range []struct {
		name  string
		cfg   Config
		kind  string
		proto int
	}{
		{"unknown CA is refused", Config{}, record.KindConnect, 0},
		{"CA file", Config{CACert: caFile}, "", 1},
		{"insecure", Config{Insecure: true}, "", 1},
		{"CA file with HTTP/2", Config{CACert: caFile, HTTP2: true}, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.BaseURL, tc.cfg.API = srv.URL, APIOpenAIChat
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			protoMu.Lock()
			proto = 0
			protoMu.Unlock()
			var rec record.Record
			c.Do(context.Background(), time.Now(), testReq, &rec)
			kind := ""
			if rec.Error != nil {
				kind = rec.Error.Kind
			}
			if kind != tc.kind {
				t.Fatalf("error %+v, want kind %q", rec.Error, tc.kind)
			}
			if kind == record.KindConnect && !strings.Contains(rec.Error.Message, "certificate") {
				t.Errorf("message %q does not say why", rec.Error.Message)
			}
			protoMu.Lock()
			defer protoMu.Unlock()
			if proto != tc.proto {
				t.Errorf("server saw HTTP/%d, want HTTP/%d", proto, tc.proto)
			}
		})
	}
	if err := (Config{BaseURL: srv.URL, API: APIOpenAIChat, CACert: filepath.Join(t.TempDir(), "none.pem")}).Validate(); err == nil {
		t.Error("a missing CA file must be reported")
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if err := (Config{BaseURL: srv.URL, API: APIOpenAIChat, CACert: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("bad CA file: %v", err)
	}
}

// writeCA writes srv's certificate as a PEM CA file and returns its path.
func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile
}
