package load

import (
	"container/heap"
	"time"
)

// Network is the path between the client and a virtual server: a request reaches the
// server half the round trip after it is sent, plus a jitter, and every token reaches the
// client half the round trip after the server emitted it.
type Network struct {
	RTT time.Duration
	// Jitter spreads the arrivals of requests sent together (at one instant, as a closed
	// loop's first wave) uniformly over [0, Jitter) after the first of them: they do not
	// reach a real server at one instant, so the first starts a step the others then wait
	// for (a deterministic spread, by submission order). A request sent alone is not
	// delayed: the spread is of the client's sends, not of the wire.
	Jitter time.Duration
	// FrontEnd is the server's front end's fixed time per request (HTTP parsing, the chat template),
	// which handles arrivals one at a time for this long each before the engine sees them:
	// on a CPU server whose engine holds a core, requests that arrive together reach the
	// engine one after another, and so are prefilled in steps of their own.
	FrontEnd time.Duration
	// PerPromptToken delays each request by this much per prompt token before the front
	// end takes it (tokenising, the chat template, parsing the body), each on its own: the
	// server's HTTP threads do it in parallel.
	PerPromptToken time.Duration
}

// WithNetwork puts the network n between RunVirtual and srv; a zero Network returns srv.
func WithNetwork(srv VirtualServer, n Network) VirtualServer {
	if n.RTT <= 0 && n.Jitter <= 0 && n.FrontEnd <= 0 && n.PerPromptToken <= 0 {
		return srv
	}
	return &network{srv: srv, up: n.RTT / 2, down: n.RTT - n.RTT/2, jitter: n.Jitter, frontEnd: n.FrontEnd, perToken: n.PerPromptToken}
}

// Unwrap is the server behind the network.
func (n *network) Unwrap() VirtualServer { return n.srv }

// network delays srv's requests and emitted tokens. Tokens are delayed by a constant, so
// they arrive in the order they left (a FIFO queue); requests by a jittered delay (a heap).
type network struct {
	srv              VirtualServer
	up, down, jitter time.Duration
	perToken         time.Duration // per prompt token, before the front end
	arrivals         dueHeap[arrival]
	// frontEnd serves arrivals in arrival order: fed holds those it has taken, each
	// reaching the engine at its at; feFree is when it is next free.
	frontEnd time.Duration
	fed      []arrival
	feHead   int
	feFree   time.Duration
	nsent    uint64
	lastSent time.Duration // when the last request was submitted (nsent > 0)
	queue    []delivery    // tokens on the wire, in arrival order from index head
	head     int
	dones    int // finished requests whose last token is still on the wire
	push     func(id uint64, at time.Duration, n int, done bool)
}

type arrival struct {
	at                time.Duration
	no                uint64 // tie-break: submission order
	id                uint64
	prompt, maxTokens int
	session           string
	hashes            []uint64
}

func (a arrival) due() (time.Duration, uint64) { return a.at, a.no }

type delivery struct {
	id   uint64
	at   time.Duration // arrival at the client
	n    int
	done bool
}

func (w *network) BlockSize() int { return w.srv.BlockSize() }

// PromptCached is the server's (see cacheReporter).
func (w *network) PromptCached(id uint64) (int, bool) {
	if c, ok := w.srv.(cacheReporter); ok {
		return c.PromptCached(id)
	}
	return 0, false
}

func (w *network) Check(prompt, maxTokens int) error { return w.srv.Check(prompt, maxTokens) }

// Submit refuses at once what the server would refuse on arrival (its reasons do not
// depend on its state), and otherwise puts the request on the wire.
func (w *network) Submit(id uint64, prompt int, hashes []uint64, maxTokens int, session string, t time.Duration) error {
	if err := w.srv.Check(prompt, maxTokens); err != nil {
		return err
	}
	together := w.nsent > 0 && t == w.lastSent
	w.nsent++
	w.lastSent = t
	at := t + w.up + time.Duration(prompt)*w.perToken
	if w.jitter > 0 && together {
		at += time.Duration(mix64(w.nsent^0x6a177e5) % uint64(w.jitter))
	}
	heap.Push(&w.arrivals, arrival{at: at, no: w.nsent, id: id, prompt: prompt, maxTokens: maxTokens, hashes: hashes, session: session})
	return nil
}

func (w *network) Next() (time.Duration, bool) {
	t, ok := w.srv.Next()
	if len(w.arrivals) > 0 {
		if a := w.arrivals[0].at; !ok || a < t {
			t, ok = a, true
		}
	}
	if w.feHead < len(w.fed) {
		if a := w.fed[w.feHead].at; !ok || a < t {
			t, ok = a, true
		}
	}
	if w.head < len(w.queue) {
		if a := w.queue[w.head].at; !ok || a < t {
			t, ok = a, true
		}
	}
	return t, ok
}

func (w *network) Process(t time.Duration, emit func(id uint64, at time.Duration, n int, done bool)) {
	if tc, ok := w.srv.Next(); ok && tc <= t {
		if w.push == nil {
			w.push = func(id uint64, at time.Duration, n int, done bool) {
				w.queue = append(w.queue, delivery{id: id, at: at + w.down, n: n, done: done})
				if done {
					w.dones++
				}
			}
		}
		w.srv.Process(t, w.push)
	}
	for len(w.arrivals) > 0 && w.arrivals[0].at <= t {
		// Arrivals leave the heap in time order, so with no front end each reaches the
		// engine when it arrives, in the loop below.
		a := heap.Pop(&w.arrivals).(arrival)
		w.feFree = max(w.feFree, a.at) + w.frontEnd
		a.at = w.feFree
		w.fed = append(w.fed, a)
	}
	for w.feHead < len(w.fed) && w.fed[w.feHead].at <= t {
		a := w.fed[w.feHead]
		w.feHead++
		// Check passed when it was sent, and nothing the engine refuses depends on its state.
		_ = w.srv.Submit(a.id, a.prompt, a.hashes, a.maxTokens, a.session, a.at)
	}
	if w.feHead == len(w.fed) {
		w.fed, w.feHead = w.fed[:0], 0
	}
	for w.head < len(w.queue) && w.queue[w.head].at <= t {
		d := w.queue[w.head]
		w.head++
		if d.done {
			w.dones--
		}
		emit(d.id, d.at, d.n, d.done)
	}
	if w.head == len(w.queue) { // reuse the buffer once drained
		w.queue, w.head = w.queue[:0], 0
	}
}

func (w *network) Kick(t time.Duration) { w.srv.Kick(t) }

func (w *network) Live() int { return w.srv.Live() + len(w.arrivals) + len(w.fed) - w.feHead + w.dones }
