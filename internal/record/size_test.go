package record

import (
	"fmt"
	"testing"
	"time"
	"unsafe"
)

// A record in memory costs at most 344 bytes plus 4 per token event (bounded memory for
// million-request runs): the struct, a typical response id, and the compact event deltas.
// (300 until --save-text's pointer and --repeat's counter, 320 until a tool call's and an
// agentic task's fields, whose 43 bytes of small fields fill 48 with the padding left: no
// order packs them tighter; records stream through the aggregator and the writer, so only
// those in flight are held.)
func TestRecordMemoryBound(t *testing.T) {
	const events = 128
	r := Record{ResponseID: fmt.Sprintf("chatcmpl-%032x", 1), OutputTokensSource: SourceUsage}
	r.Events.Grow(events)
	for i := 0; i < events; i++ {
		r.Events.Append(time.Duration(i)*time.Millisecond, 1)
	}
	fixed := int(unsafe.Sizeof(r)) + len(r.ResponseID) // OutputTokensSource is a shared constant
	perEvent := float64(cap(r.Events.deltas)*4) / events
	if fixed > 344 || perEvent > 4 {
		t.Errorf("record: %d bytes fixed (limit 344), %.1f bytes per event (limit 4)", fixed, perEvent)
	}
}
