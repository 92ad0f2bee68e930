// Command llmbench measures how fast LLM serving endpoints really are.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmbench/llmbench/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go cli.Interrupts(sigs, cancel, os.Stderr, os.Exit, time.Now)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	cancel()
	os.Exit(code)
}
