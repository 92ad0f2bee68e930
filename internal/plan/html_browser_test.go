package plan

import (
	"testing"

	"github.com/llmbench/llmbench/internal/browsertest"
)

// plan.html reads well at the width a reader opens it: the chart's labels overlap nothing
// and the table of candidates fits the window.
func TestPlanHTMLInChromium(t *testing.T) {
	_, page := chosenPlanPage(t)
	browsertest.CheckPage(t, "plan.html", page, 10)
}
