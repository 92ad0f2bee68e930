package plan

import "sync"

// Watch follows a plan from another goroutine (a progress line's): how far it has got.
type Watch struct {
	mu   sync.Mutex
	last Progress
}

// Follow sets cfg's Progress to keep w current.
func (w *Watch) Follow(cfg *Config) {
	cfg.Progress = func(p Progress) {
		w.mu.Lock()
		w.last = p
		w.mu.Unlock()
	}
}

// Now is how far the plan has got: its last Progress, zero before it starts.
func (w *Watch) Now() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
