package sim

import (
	"context"
	"fmt"
	"github.com/llmbench/llmbench/internal/route"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// vserver is what Virtual and Fleet share (load.VirtualServer, which sim cannot import).
type vserver interface {
	Submit(id uint64, prompt int, hashes []uint64, maxTokens int, session string, t time.Duration) error
	Next() (time.Duration, bool)
	Process(t time.Duration, emit func(id uint64, at time.Duration, n int, done bool))
	Kick(t time.Duration)
	Live() int
}

type varrival struct {
	at          time.Duration
	prompt, out int
	hashes      []uint64
}

type vevent struct {
	id   uint64
	at   time.Duration
	done bool
}

// runVirtual drives srv as load.RunVirtual does (process the engine's events, submit what
// is due, kick), with arrival i as request id i, and returns every token event in order.
func runVirtual(t *testing.T, srv vserver, arr []varrival) []vevent {
	t.Helper()
	var evs []vevent
	emit := func(id uint64, at time.Duration, n int, done bool) {
		for range n {
			evs = append(evs, vevent{id, at, done})
		}
	}
	next := 0
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			t.Fatal("runaway simulation")
		}
		tc, okc := srv.Next()
		if !okc && next == len(arr) {
			break
		}
		now := tc
		if next < len(arr) && (!okc || arr[next].at <= tc) {
			now = arr[next].at
		}
		if okc && tc == now {
			srv.Process(now, emit)
		}
		for ; next < len(arr) && arr[next].at == now; next++ {
			a := arr[next]
			if err := srv.Submit(uint64(next), a.prompt, a.hashes, a.out, "", now); err != nil {
				t.Fatalf("request %d: %v", next, err)
			}
		}
		srv.Kick(now)
	}
	if n := srv.Live(); n != 0 {
		t.Fatalf("%d sequences never finished", n)
	}
	return evs
}

func fleetProfile(t *testing.T, replicas int, router string) Profile {
	t.Helper()
	p := mustProfile(t, "")
	p.Deployment.Replicas, p.Deployment.Router = replicas, router
	p.Engine.PrefixCaching = router == RouterPrefixAffinity
	return p
}

// staggered arrivals of mixed lengths, some sharing a prompt prefix.
func mixedArrivals(n int) []varrival {
	arr := make([]varrival, n)
	for i := range arr {
		arr[i] = varrival{at: time.Duration(i/3) * 7 * time.Millisecond, prompt: 64 + 37*(i%5), out: 4 + i%7,
			hashes: []uint64{uint64(1 + i%4), uint64(100 + i)}}
	}
	return arr
}

// TestFleetOneReplicaIsVirtual: a fleet of one is its engine, event for event.
func TestFleetOneReplicaIsVirtual(t *testing.T) {
	p := fleetProfile(t, 1, RouterLeastOutstanding)
	v, err := NewVirtual(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFleet(p)
	if err != nil {
		t.Fatal(err)
	}
	a, b := runVirtual(t, v, mixedArrivals(40)), runVirtual(t, f, mixedArrivals(40))
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("fleet of 1: %d events, engine: %d; they differ", len(b), len(a))
	}
}

// TestFleetRoutes: each policy places requests where it says, and every request finishes.
func TestFleetRoutes(t *testing.T) {
	// Six requests at once over three replicas.
	six := make([]varrival, 6)
	for i := range six {
		six[i] = varrival{prompt: 100, out: 5, hashes: []uint64{uint64(i % 2), uint64(10 + i)}}
	}
	for _, tc := range []struct {
		router string
		want   []int // requests per replica, right after the submissions
	}{
		{RouterRoundRobin, []int{2, 2, 2}},
		{RouterLeastOutstanding, []int{2, 2, 2}},
		// Two prefixes: the first request of each picks the least loaded; the rest follow it.
		{RouterPrefixAffinity, []int{3, 3, 0}},
	} {
		t.Run(tc.router, func(t *testing.T) {
			f, err := NewFleet(fleetProfile(t, 3, tc.router))
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range six {
				if err := f.Submit(uint64(i), a.prompt, a.hashes, a.out, "", 0); err != nil {
					t.Fatal(err)
				}
			}
			var got []int
			for i := range f.Replicas() {
				got = append(got, f.Replica(i).Live())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("requests per replica %v, want %v", got, tc.want)
			}
			f.Kick(0)
			evs := runVirtual(t, f, nil)
			done := 0
			for _, e := range evs {
				if e.done {
					done++
				}
			}
			if len(evs) != 6*5 || done != 6 {
				t.Errorf("%d token events, %d done; want 30, 6", len(evs), done)
			}
		})
	}
}

// TestFleetDeterministic: the same arrivals give the same token times, for every policy;
// and two replicas finish a burst sooner than one.
func TestFleetDeterministic(t *testing.T) {
	for _, r := range []string{RouterRoundRobin, RouterLeastOutstanding, RouterPrefixAffinity} {
		t.Run(r, func(t *testing.T) {
			run := func(replicas int) []vevent {
				f, err := NewFleet(fleetProfile(t, replicas, r))
				if err != nil {
					t.Fatal(err)
				}
				return runVirtual(t, f, mixedArrivals(300))
			}
			a, b := run(2), run(2)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("two runs differ")
			}
			if one := run(1); one[len(one)-1].at <= a[len(a)-1].at {
				t.Errorf("one replica ends at %v, two at %v", one[len(one)-1].at, a[len(a)-1].at)
			}
		})
	}
}

// TestEngineFleet: on the wall clock, the router spreads requests over the replicas'
// engines, each paced alone, and Stats adds them up.
func TestEngineFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p := mustProfile(t, "textbook")
		p.Deployment.Replicas, p.Deployment.Router = 2, RouterRoundRobin
		f := newEngineFleet(p, false) // a bubble cannot drive the kernel timer
		go f.Start(ctx)
		t0 := time.Now()
		var chs []<-chan Step
		for range 4 {
			ch, err := f.Submit(ctx, SeqRequest{PromptTokens: 512, MaxTokens: 10, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			chs = append(chs, ch)
		}
		rs := f.ReplicaStats()
		if len(rs) != 2 || rs[0].Running+rs[0].Waiting != 2 || rs[1].Running+rs[1].Waiting != 2 {
			t.Errorf("replica stats %+v, want 2 requests on each", rs)
		}
		if st := f.Stats(); st.Running+st.Waiting != 4 {
			t.Errorf("fleet stats %+v, want 4 requests", st)
		}
		for i, ch := range chs {
			var last time.Time
			for st := range ch {
				last = st.At
			}
			// Two per engine: 10.24 ms prefill, then 9 steps of 8 × 1.12 = 8.96 ms.
			if got, want := last.Sub(t0), 10240*time.Microsecond+9*8960*time.Microsecond; got != want {
				t.Errorf("request %d: last token at %v, want %v", i, got, want)
			}
		}
		if st := f.Stats(); st.GenerationTokens != 40 || st.PromptTokens != 4*512 || st.Running+st.Waiting != 0 {
			t.Errorf("fleet stats after the run: %+v", st)
		}
	})
}

// TestMaxModelLen: a request longer than max_model_len is refused (the server's 400), one
// within it runs; the limit must fit the cache.
func TestMaxModelLen(t *testing.T) {
	p := mustProfile(t, "")
	p.Deployment.MaxModelLen = 1000
	v, err := NewVirtual(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Submit(1, 900, nil, 101, "", 0); err == nil || err.Error() != "prompt of 900 tokens plus max_tokens 101 exceeds the model's maximum length 1000 (max_model_len)" {
		t.Errorf("over max_model_len: %v", err)
	}
	if err := v.Submit(2, 900, nil, 100, "", 0); err != nil {
		t.Errorf("at max_model_len: %v", err)
	}
	p.Engine.KVCacheTokens = 512
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "deployment.max_model_len: 1000 exceeds the KV cache of 512 tokens per replica") {
		t.Errorf("max_model_len beyond the cache: %v", err)
	}
}

// TestFleetSessionRouter: the session router keeps a session's requests on the replica its
// key hashes to (route.SessionServer, the one run --balance session picks among several
// --url), and spreads requests of no session least-outstanding.
func TestFleetSessionRouter(t *testing.T) {
	f, err := NewFleet(fleetProfile(t, 3, RouterSession))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		key := fmt.Sprint("task-", i%4)
		if err := f.Submit(uint64(i), 100, nil, 5, key, 0); err != nil {
			t.Fatal(err)
		}
		if want := route.SessionServer(key, 3); f.where[i] != want {
			t.Errorf("request %d of %s on replica %d, want %d", i, key, f.where[i], want)
		}
	}
	// A request of no session goes to the replica with the fewest in flight.
	live := []int{f.Replica(0).Live(), f.Replica(1).Live(), f.Replica(2).Live()}
	least := slices.Index(live, slices.Min(live))
	if err := f.Submit(12, 100, nil, 5, "", 0); err != nil {
		t.Fatal(err)
	}
	if f.where[12] != least {
		t.Errorf("a request of no session on replica %d, want the least loaded %d of %v", f.where[12], least, live)
	}
}
