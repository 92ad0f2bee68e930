package route

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestRouterPolicies(t *testing.T) {
	counts := []int{2, 0, 1}
	out := func(i int) int { return counts[i] }

	rr := New(RoundRobin, 3)
	var got []int
	for range 5 {
		got = append(got, rr.Pick("", []uint64{7}, out))
	}
	if !reflect.DeepEqual(got, []int{0, 1, 2, 0, 1}) {
		t.Errorf("round-robin: %v", got)
	}

	lo := New(LeastOutstanding, 3)
	if i := lo.Pick("", nil, out); i != 1 {
		t.Errorf("least-outstanding of %v: %d", counts, i)
	}
	counts = []int{1, 1, 1}
	if i := lo.Pick("", nil, out); i != 0 {
		t.Errorf("least-outstanding tie: %d, want the lowest index", i)
	}
	counts = []int{3, 2, 2}
	if i := lo.Pick("", nil, out); i != 1 {
		t.Errorf("least-outstanding of %v: %d", counts, i)
	}

	pa := New(PrefixAffinity, 3)
	counts = []int{3, 1, 2}
	if i := pa.Pick("", []uint64{11, 12}, out); i != 1 {
		t.Errorf("prefix-affinity, new prefix: %d, want least-outstanding 1", i)
	}
	counts = []int{0, 5, 0}
	if i := pa.Pick("", []uint64{11, 99}, out); i != 1 {
		t.Errorf("prefix-affinity, same first block: %d, want 1 where it was served", i)
	}
	if i := pa.Pick("", []uint64{21}, out); i != 0 {
		t.Errorf("prefix-affinity, another prefix: %d, want least-outstanding 0", i)
	}
	if i := pa.Pick("", nil, out); i != 0 {
		t.Errorf("prefix-affinity without hashes: %d, want least-outstanding 0", i)
	}

	// Session: a session's requests go to one server, by a hash of its key; requests of no
	// session least-outstanding.
	se := New(Session, 3)
	counts = []int{4, 4, 0}
	seen := map[int]bool{}
	for i := range 60 {
		key := fmt.Sprint("c", i%20)
		got := se.Pick(key, nil, out)
		if got != SessionServer(key, 3) {
			t.Fatalf("session %s went to %d, then %d", key, SessionServer(key, 3), got)
		}
		seen[got] = true
	}
	if len(seen) != 3 {
		t.Errorf("20 sessions over 3 servers used %v", seen)
	}
	if i := se.Pick("", nil, out); i != 2 {
		t.Errorf("session, no key: %d, want least-outstanding 2", i)
	}
	if err := Check("sticky", Policies...); err == nil || !strings.Contains(err.Error(), "round-robin, least-outstanding, session, prefix-affinity") {
		t.Errorf("Check: %v", err)
	}
}
