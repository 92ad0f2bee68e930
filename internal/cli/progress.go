package cli

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a level's progress on stderr when stderr is a terminal; otherwise nothing,
// so logs and CI output stay clean.
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, name string, total int, d time.Duration, disabled bool) *progress {
	f, ok := w.(*os.File)
	if disabled || !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	max := int64(total)
	desc := name
	if d > 0 {
		max = -1 // a timed level has no known count: show a spinner with the count
		desc += " (" + d.String() + ")"
	}
	return &progress{bar: progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) add() {
	if p.bar != nil {
		p.bar.Add(1)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
