package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/plan"
)

// planProgressLine is what plan's progress line says: pure, for tests.
func planProgressLine(p plan.Progress, routers int, elapsed time.Duration) string {
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
