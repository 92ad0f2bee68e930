package plan

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

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

// Line is what a progress line says of p: the engine configurations planned (each tried
// behind routers), those meeting the SLOs and the cheapest, the time elapsed and, once
// some are done, the time left at their pace.
func (p Progress) Line(routers int, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %d/%d engine configurations", p.Done, p.Total)
	if routers > 1 {
		fmt.Fprintf(&b, " × %d routers", routers)
	}
	fmt.Fprintf(&b, ", %d meet the SLOs", p.Meeting)
	if c := p.Cheapest; c != nil {
		fmt.Fprintf(&b, ", cheapest %d × %s tp %d", c.Replicas, c.GPU, c.TP)
		if c.USDPerHour != nil {
			fmt.Fprintf(&b, " at %.2f USD/h", *c.USDPerHour)
		}
	}
	fmt.Fprintf(&b, ", %s", elapsed.Round(time.Second))
	if p.Done > 0 && p.Done < p.Total {
		left := time.Duration(float64(elapsed) / float64(p.Done) * float64(p.Total-p.Done))
		fmt.Fprintf(&b, ", ~%s left", left.Round(time.Second))
	}
	return b.String()
}
