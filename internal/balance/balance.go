// Package balance spreads a run's requests over several endpoints (run --url A --url B),
// by the route package's policies: the client-side twin of a router in front of replicas.
package balance

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/workload"
)

// downAfter is how many connection failures in a row mark an endpoint down, and retryAfter
// how long a down endpoint is left alone before one request tries it again: a dead
// endpoint costs the run a few failures, not every request its policy sends it.
const (
	downAfter  = 3
	retryAfter = 2 * time.Second
)

// Target sends each request to one of several endpoints' targets and records which
// (record.Endpoint, 1-based). Safe for concurrent use.
type Target struct {
	targets []load.Target
	mu      sync.Mutex
	router  *route.Router
	policy  string
	out     []int       // requests in flight, by endpoint
	fails   []int       // connection failures in a row, by endpoint
	downAt  []time.Time // when an endpoint was marked down; zero while up
	now     func() time.Time
}

// New balances over targets (one per endpoint, in --url order) by policy (route.Policies
// but prefix-affinity, which needs the prompt's blocks a client does not see).
func New(targets []load.Target, policy string) *Target {
	n := len(targets)
	return &Target{targets: targets, router: route.New(policy, n), policy: policy, out: make([]int, n),
		fails: make([]int, n), downAt: make([]time.Time, n), now: time.Now}
}

// Do implements load.Target.
func (b *Target) Do(ctx context.Context, start time.Time, req workload.Request, rec *record.Record) {
	i := b.pick(req.Session())
	rec.Endpoint = int16(i + 1)
	b.targets[i].Do(ctx, start, req, rec)
	b.done(i, rec)
}

// pick is the policy's endpoint, or, where that one is down, the live one with the fewest
// requests in flight (a down endpoint whose wait is over takes the request: its retry).
func (b *Target) pick(session string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.router.Pick(session, nil, func(j int) int { return b.out[j] })
	if b.down(i) && session != "" && b.policy == route.Session {
		// The session moves to the live endpoint next in its own order, and stays there.
		if j := route.SessionServerOf(session, len(b.out), func(j int) bool { return !b.down(j) }); j >= 0 {
			i = j
		}
	}
	if b.down(i) {
		j := route.Fewest(len(b.out), func(j int) int {
			if b.down(j) {
				return math.MaxInt
			}
			return b.out[j]
		})
		if !b.down(j) {
			i = j
		}
	}
	if !b.downAt[i].IsZero() {
		b.downAt[i] = b.now() // its retry is under way: the next waits again
	}
	b.out[i]++
	return i
}

// down says endpoint i is marked down and its wait is not over. Under mu.
func (b *Target) down(i int) bool {
	return !b.downAt[i].IsZero() && b.now().Sub(b.downAt[i]) < retryAfter
}

// done counts endpoint i's request finished: a connection failure counts towards marking
// it down, anything the server answered marks it up.
func (b *Target) done(i int, rec *record.Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out[i]--
	if rec.Error != nil && rec.Error.Kind == record.KindConnect {
		if b.fails[i]++; b.fails[i] >= downAfter && b.downAt[i].IsZero() {
			b.downAt[i] = b.now()
		}
		return
	}
	if rec.Error == nil || rec.Error.Kind != record.KindCanceled {
		b.fails[i], b.downAt[i] = 0, time.Time{}
	}
}
