package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/report"
)

// Await returns once every folder holds a finished run: a summary.json whose end reason is no
// longer "running" (a run writes one as it starts and rewrites it at its end, interrupted or
// not). It looks every poll, so a merge started beside its shards (a Kubernetes Job applied
// with them) waits for them; when ctx ends first, the error names the folders still waited
// for and what each holds.
func Await(ctx context.Context, dirs []string, poll time.Duration) error {
	waiting := map[string]string{}
	for _, d := range dirs {
		waiting[d] = ""
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		for _, d := range dirs {
			if _, ok := waiting[d]; !ok {
				continue
			}
			sum, err := report.ReadDir(d)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				waiting[d] = "no summary.json yet"
			case err != nil:
				// A summary being replaced is never half-written (it is renamed into place), so
				// an unreadable one is not worth waiting for.
				return err
			case sum.EndReason == report.EndRunning:
				waiting[d] = "its run is still running"
			default:
				delete(waiting, d)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			var still []string
			for _, d := range dirs {
				if why, ok := waiting[d]; ok {
					still = append(still, fmt.Sprintf("%s (%s)", d, why))
				}
			}
			return fmt.Errorf("gave up waiting for %d of %d shards: %s; a shard that failed never finishes: see its logs", len(still), len(dirs), strings.Join(still, ", "))
		case <-t.C:
		}
	}
}
