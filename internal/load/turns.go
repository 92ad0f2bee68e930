package load

import (
	"time"
)

// This file holds the pure part of a multi-turn level (requests with Turns > 1): which
// conversations start, which of their turns are sent, when, and how each is marked. Like
// OpenLoop and ClosedLoop it has no clock: Run drives it on the wall clock and the
// simulator on its virtual clock, so both follow the same rules (see the package comment).

// Turn is one request of a conversation that is to be sent.
type Turn struct {
	Index        int           // request index in the level: Conversation*Turns + Turn
	Conversation int           // conversation number in the (unsharded) level
	Turn         int           // 0-based turn within the conversation
	Scheduled    time.Duration // when it is due, as an offset from the level's start
	Warmup       bool          // excluded from metrics
	conv         *conversation
}

// conversation is the state of one started conversation.
type conversation struct {
	// res is how many measured requests the conversation may still send: reserved from
	// the level's count when it started, so the conversations in flight never promise
	// more than the level's Requests.
	res int
	// left is how many of its turns that are not warm-up by index are still unsent.
	left int
	done bool
	// size is the conversation's requests: the level's turns, or an agentic task's own.
	size int
	// warm is an agentic task's first call's mark, which its later calls share: a task is
	// measured whole or not at all (task figures count tasks by their start).
	warm bool
}

// Conversations plans a multi-turn level. Conversation c is requests c*Turns ..
// c*Turns+Turns-1; this shard runs the conversations c % Shards == Shard, and each of
// its turns after the first is due when the previous one finished plus the think time.
// Not safe for concurrent use.
type Conversations struct {
	lvl      Level
	turns    int
	shard, n int
	quota    int // measured requests this shard sends; 0 = not bounded by count
	measured int // measured requests sent
	reserved int // measured requests the live conversations may still send
	k        int // this shard's conversations started so far
	reason   EndReason
	// size, when set, is the number of requests of the conversation whose first request
	// is index first (an agentic task's calls); nil: every conversation has turns.
	size func(first int) int

	// Open loop: the unsharded plan's j-th time starts shard j % Shards's next conversation.
	plan   *arrivals
	j      int
	due    time.Duration
	hasDue bool
}

// NewConversations starts the plan of a validated multi-turn level of the given number of
// turns (> 1). Conversation starts follow the level's arrival plan in an open loop.
func NewConversations(lvl Level, turns int) *Conversations {
	c := &Conversations{lvl: lvl, turns: turns}
	c.shard, c.n = lvl.sharded()
	if lvl.Requests > 0 {
		c.quota = c.shareOfRange(lvl.Warmup, lvl.Warmup+lvl.Requests)
		if c.quota == 0 {
			// Fewer conversations than shards: this one has nothing to measure (and a
			// zero quota would mean "unbounded").
			c.reason = EndRequests
		}
	}
	if !lvl.Closed() {
		c.plan = newArrivals(lvl)
	}
	return c
}

// shareOfRange counts the request indices in [lo, hi) that belong to this shard's
// conversations.
func (c *Conversations) shareOfRange(lo, hi int) int {
	n := 0
	for conv := lo / c.turns; conv*c.turns < hi; conv++ {
		if conv%c.n == c.shard {
			n += min(hi, (conv+1)*c.turns) - max(lo, conv*c.turns)
		}
	}
	return n
}

// Turns is the number of turns of each conversation.
func (c *Conversations) Turns() int { return c.turns }

// Reason is why the level stopped starting conversations; empty while it may start more.
func (c *Conversations) Reason() EndReason { return c.reason }

// NextStart is when the open loop's next conversation start is due, as an offset from
// the level's start; ok is false once the level starts no more conversations. It does
// not consume the start: Start does.
func (c *Conversations) NextStart() (due time.Duration, ok bool) {
	if c.reason != "" {
		return 0, false
	}
	for !c.hasDue {
		d := c.plan.Next()
		j := c.j
		c.j++
		if j%c.n == c.shard {
			c.due, c.hasDue = d, true
		}
	}
	return c.due, true
}

// Start starts this shard's next conversation at s: the due time NextStart returned (open
// loop), or the instant a worker's slot freed (closed loop). ok is false when nothing
// starts: the level has stopped (Reason is set), or the conversations in flight may still
// send all of the level's remaining measured requests. In an open loop the start is then
// skipped; a closed-loop worker stops.
func (c *Conversations) Start(s time.Duration) (t Turn, ok bool) {
	if c.plan != nil {
		c.hasDue = false
	}
	if c.reason != "" {
		return Turn{}, false
	}
	l := c.lvl
	if l.Duration > 0 && s >= l.Duration {
		c.reason = EndDuration
		return Turn{}, false
	}
	conv := c.shard + c.n*c.k
	first := conv * c.turns
	// Turns that are warm-up by index are known now; any other may be measured.
	size := c.turns
	if c.size != nil {
		size = min(c.turns, c.size(first))
	}
	cv := &conversation{left: size - min(size, max(0, l.Warmup-first)), size: size}
	cv.res = cv.left
	if c.quota > 0 {
		cv.res = min(cv.left, c.quota-c.measured-c.reserved)
		if cv.left > 0 && cv.res <= 0 {
			return Turn{}, false
		}
	}
	c.k++
	c.reserved += cv.res
	t = Turn{Index: first, Conversation: conv, conv: cv}
	return t, c.classify(&t, s)
}

// Next is the turn after t, due at s (t's end plus the think time). end says that t's
// conversation ends after it (t failed, or was its last turn); then s is unused. ok is
// false when no further turn is sent: the conversation ended, reached the level's
// Duration, or used the measured requests it reserved.
func (c *Conversations) Next(t Turn, end bool, s time.Duration) (next Turn, ok bool) {
	cv := t.conv
	if cv == nil || cv.done {
		return Turn{}, false
	}
	if end || t.Turn+1 >= cv.size {
		c.finish(cv)
		return Turn{}, false
	}
	next = Turn{Index: t.Index + 1, Conversation: t.Conversation, Turn: t.Turn + 1, conv: cv}
	if l := c.lvl; l.Duration > 0 && s >= l.Duration && c.size == nil {
		// A conversation stops at the level's end; an agentic task started before it runs
		// to its end (cutting it would keep only the short tasks).
		c.finish(cv)
		return Turn{}, false
	}
	if next.Index >= c.lvl.Warmup && cv.res == 0 {
		c.finish(cv)
		return Turn{}, false
	}
	return next, c.classify(&next, s)
}

// Abandon ends t's conversation without sending its later turns: the driver could not
// send t (interrupted, or the level ended while it waited for a slot).
func (c *Conversations) Abandon(t Turn) {
	if t.conv != nil && !t.conv.done {
		c.finish(t.conv)
	}
}

// classify marks t, due at s, and spends the conversation's reservation on a measured
// turn. It reports true: t is sent.
func (c *Conversations) classify(t *Turn, s time.Duration) bool {
	l, cv := c.lvl, t.conv
	t.Scheduled = s
	byIndex := t.Index < l.Warmup
	t.Warmup = byIndex || s < l.WarmupTime || (l.Duration > 0 && s >= l.Duration-l.Cooldown)
	if c.size != nil {
		if t.Turn == 0 {
			cv.warm = t.Warmup
		}
		t.Warmup = cv.warm || byIndex
	}
	if !byIndex {
		cv.left--
		if t.Warmup {
			c.release(cv, cv.res-min(cv.res, cv.left)) // fewer turns left to measure
		} else {
			cv.res--
			c.reserved--
			c.measured++
			if c.quota > 0 && c.measured == c.quota {
				c.reason = EndRequests // this one is still sent; no conversation starts after it
			}
		}
	}
	if t.Turn+1 >= cv.size {
		c.finish(cv) // nothing after the last turn: free its reservation now
	}
	return true
}

func (c *Conversations) finish(cv *conversation) {
	c.release(cv, cv.res)
	cv.done = true
}

func (c *Conversations) release(cv *conversation, n int) {
	cv.res -= n
	c.reserved -= n
}
