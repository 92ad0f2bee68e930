// Package route chooses which of several servers takes a request: the one set of policies
// that llmbench's client balances live endpoints by (run --url ... --balance) and that the
// simulator's fleets route their replicas by (deployment.router), so a live fleet and its
// simulation are compared like for like.
package route

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Policies.
const (
	RoundRobin       = "round-robin"       // in turn
	LeastOutstanding = "least-outstanding" // fewest requests in flight, ties to the lowest index
	// Session sends every request of a session (a conversation, an agentic task) to the
	// server its key hashes to, so the server that holds its context serves it again;
	// requests of no session go least-outstanding.
	Session = "session"
	// PrefixAffinity sends a prompt to the server that last served its first block, else
	// least-outstanding (the simulator's fleets, which see the prompt's blocks).
	PrefixAffinity = "prefix-affinity"
)

// SessionHeader is the header a request's session key travels in by default (vLLM's
// router reads it; Dynamo's is X-Dynamo-Session-ID).
const SessionHeader = "X-Session-ID"

// Policies are the policies Parse accepts, in the order help lists them.
var Policies = []string{RoundRobin, LeastOutstanding, Session, PrefixAffinity}

// Check says why policy is not one of allowed (nil when it is).
func Check(policy string, allowed ...string) error {
	for _, a := range allowed {
		if policy == a {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", policy, strings.Join(allowed, ", "))
}

// maxAffinity bounds prefix-affinity's memory of leading blocks: when it is full it starts
// again, as a router's bounded cache would forget (deterministically here).
const maxAffinity = 1 << 20

// Router chooses a server for each request. Not safe for concurrent use.
type Router struct {
	policy string
	n      int
	next   int            // round-robin: the next server
	last   map[uint64]int // prefix-affinity: first prompt block hash -> the server that last served it
}

// New is a router of n servers by policy ("" is least-outstanding).
func New(policy string, n int) *Router {
	r := &Router{policy: policy, n: n}
	if policy == PrefixAffinity {
		r.last = map[uint64]int{}
	}
	return r
}

// Pick returns the server for a request of session key session ("" for none) whose
// prompt blocks hash to hashes (nil without a prefix cache); outstanding(i) is server i's
// requests sent and not finished.
func (r *Router) Pick(session string, hashes []uint64, outstanding func(i int) int) int {
	switch r.policy {
	case RoundRobin:
		i := r.next
		r.next = (r.next + 1) % r.n
		return i
	case Session:
		if session != "" {
			return SessionServer(session, r.n)
		}
	case PrefixAffinity:
		if len(hashes) > 0 {
			if i, ok := r.last[hashes[0]]; ok {
				return i
			}
			i := Fewest(r.n, outstanding)
			if len(r.last) >= maxAffinity {
				clear(r.last)
			}
			r.last[hashes[0]] = i
			return i
		}
	}
	return Fewest(r.n, outstanding)
}

// SessionServer is the server of n that session's requests go to: a hash of its key, the
// same in every process and on either clock.
func SessionServer(session string, n int) int {
	return SessionServerOf(session, n, nil)
}

// SessionServerOf is SessionServer among the servers up says are up (nil: all): the one
// whose hash with the key is highest (rendezvous hashing), so that when a server goes
// down only its sessions move, each to a server of its own, and stay there. -1 when none
// is up.
func SessionServerOf(session string, n int, up func(i int) bool) int {
	best, bestH := -1, uint64(0)
	for i := range n {
		if up != nil && !up(i) {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(session))
		h.Write([]byte{0, byte(i), byte(i >> 8)})
		if v := h.Sum64(); best < 0 || v > bestH {
			best, bestH = i, v
		}
	}
	return best
}

// Fewest is the server with the fewest requests in flight, ties to the lowest
// index: O(servers) per request.
func Fewest(n int, outstanding func(i int) int) int {
	best, bestN := 0, outstanding(0)
	for i := 1; i < n && bestN > 0; i++ {
		if k := outstanding(i); k < bestN {
			best, bestN = i, k
		}
	}
	return best
}
