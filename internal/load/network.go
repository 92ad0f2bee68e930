package load

import "time"

// WithNetwork puts a network of round trip rtt between RunVirtual and srv: every token
// reaches the client rtt after the engine emitted it. The whole round trip sits on the
// response path; the engine sees the same work either way (a request reaching it later or
// its answer reaching the client later delay the next closed-loop request alike), and
// a request the server refuses is still refused at once. rtt <= 0 returns srv.
func WithNetwork(srv VirtualServer, rtt time.Duration) VirtualServer {
	if rtt <= 0 {
		return srv
	}
	return &network{srv: srv, rtt: rtt}
}

// network delays srv's emitted tokens by rtt. The delay is constant, so the tokens in
// flight arrive in the order they left: a FIFO queue.
type network struct {
	srv   VirtualServer
	rtt   time.Duration
	queue []delivery // in arrival order; head at index head
	head  int
	dones int // finished requests whose last token is still on the wire
	push  func(id uint64, at time.Duration, n int, done bool)
}

type delivery struct {
	id   uint64
	at   time.Duration // arrival at the client
	n    int
	done bool
}

func (w *network) BlockSize() int { return w.srv.BlockSize() }

func (w *network) Submit(id uint64, prompt int, hashes []uint64, maxTokens int, t time.Duration) error {
	return w.srv.Submit(id, prompt, hashes, maxTokens, t)
}

func (w *network) Next() (time.Duration, bool) {
	t, ok := w.srv.Next()
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
				w.queue = append(w.queue, delivery{id: id, at: at + w.rtt, n: n, done: done})
				if done {
					w.dones++
				}
			}
		}
		w.srv.Process(t, w.push)
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

func (w *network) Live() int { return w.srv.Live() + w.dones }
