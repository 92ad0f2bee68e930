// Command stallmon measures how late this machine wakes a sleeping thread: it sleeps 1 ms in
// a loop and records how much later than asked each wake-up came, until interrupted, then
// prints the distribution. Run beside a benchmark (bench/fidelity.sh does), it is the floor
// under any client's timing error on the same machine: a client cannot read an event sooner
// than the kernel runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"
)

func main() {
	period := flag.Duration("period", time.Millisecond, "sleep between wake-ups")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var late []time.Duration
	for ctx.Err() == nil {
		t := time.Now()
		time.Sleep(*period)
		late = append(late, time.Since(t)-*period)
	}
	if len(late) == 0 {
		return
	}
	slices.Sort(late)
	q := func(p float64) float64 {
		return float64(late[int(p/100*float64(len(late)-1))]) / 1e6
	}
	fmt.Printf("wake-ups %d, late by (ms): p50 %.3f p99 %.3f p99.9 %.3f max %.3f\n",
		len(late), q(50), q(99), q(99.9), float64(late[len(late)-1])/1e6)
}
