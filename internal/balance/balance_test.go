package balance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/workload"
)

// endpoint is a fake endpoint: it counts its requests and, when dead, fails them to connect.
type endpoint struct {
	mu   sync.Mutex
	n    int
	dead bool
}

func (e *endpoint) Do(_ context.Context, _ time.Time, _ workload.Request, rec *record.Record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if e.dead {
		rec.Error = &record.Error{Kind: record.KindConnect, Message: "connection refused"}
	}
}

func endpoints(n int) ([]*endpoint, []load.Target) {
	es := make([]*endpoint, n)
	ts := make([]load.Target, n)
	for i := range es {
		es[i] = &endpoint{}
		ts[i] = es[i]
	}
	return es, ts
}

// TestSessionsStayOnOneEndpoint: with the session policy every request of a task or
// conversation goes to one endpoint, recorded 1-based; requests of no session spread.
func TestSessionsStayOnOneEndpoint(t *testing.T) {
	_, ts := endpoints(3)
	b := New(ts, route.Session)
	where := map[string]int16{}
	used := map[int16]bool{}
	for i := range 120 {
		req := workload.Request{Task: workload.TaskCall{Task: i % 30, Steps: 4}}
		var rec record.Record
		b.Do(t.Context(), time.Now(), req, &rec)
		if rec.Endpoint < 1 || rec.Endpoint > 3 {
			t.Fatalf("endpoint %d, want 1..3", rec.Endpoint)
		}
		k := req.Session()
		if w, ok := where[k]; ok && w != rec.Endpoint {
			t.Fatalf("%s went to %d, then %d", k, w, rec.Endpoint)
		}
		where[k] = rec.Endpoint
		used[rec.Endpoint] = true
	}
	if len(used) != 3 {
		t.Errorf("30 tasks used endpoints %v, want all 3", used)
	}
}

// TestDeadEndpointIsLeftAlone: an endpoint that fails to connect 3 times in a row is
// passed over (its sessions go to the others) until its wait is over, when one request
// tries it again; the others take the rest.
func TestDeadEndpointIsLeftAlone(t *testing.T) {
	es, ts := endpoints(3)
	b := New(ts, route.RoundRobin)
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }
	es[1].dead = true
	for range 60 {
		var rec record.Record
		b.Do(t.Context(), now, workload.Request{}, &rec)
	}
	if es[1].n != downAfter {
		t.Errorf("the dead endpoint took %d requests, want the %d that marked it down", es[1].n, downAfter)
	}
	if es[0].n+es[2].n != 60-downAfter {
		t.Errorf("the live ones took %d and %d", es[0].n, es[2].n)
	}
	now = now.Add(retryAfter)
	for range 3 {
		var rec record.Record
		b.Do(t.Context(), now, workload.Request{}, &rec)
	}
	if es[1].n != downAfter+1 {
		t.Errorf("after its wait the dead endpoint took %d, want one retry", es[1].n-downAfter)
	}
	es[1].dead = false
	now = now.Add(retryAfter)
	for range 30 {
		var rec record.Record
		b.Do(t.Context(), now, workload.Request{}, &rec)
	}
	if es[1].n < downAfter+1+9 {
		t.Errorf("back up, it took %d of 30", es[1].n-downAfter-1)
	}
}
