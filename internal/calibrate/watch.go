package calibrate

import "sync"

// Watch follows a fit from another goroutine (a progress line's): what the fit is doing
// and how many profiles it has simulated so far.
type Watch struct {
	mu    sync.Mutex
	doing string
	tried int
}

// NewWatch is a watch of a fit not yet under way, doing what doing says.
func NewWatch(doing string) *Watch { return &Watch{doing: doing} }

// Follow sets opts' Progress and Tried to keep w current; said, when set, is told each
// step the fit takes, after w knows it.
func (w *Watch) Follow(opts *Options, said func(string)) {
	opts.Progress = func(s string) {
		w.mu.Lock()
		w.doing = s
		w.mu.Unlock()
		if said != nil {
			said(s)
		}
	}
	opts.Tried = func(n int) {
		w.mu.Lock()
		w.tried = n
		w.mu.Unlock()
	}
}

// Now is what the fit is doing and how many profiles it has simulated.
func (w *Watch) Now() (doing string, tried int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.doing, w.tried
}
