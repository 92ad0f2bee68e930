// Command llmbench measures how fast LLM serving endpoints really are.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmbench/llmbench/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		// First signal: stop sending, cancel in-flight requests, keep what was measured.
		fmt.Fprintln(os.Stderr, "\ninterrupted: stopping and keeping what was measured (press Ctrl-C again to exit at once)")
		cancel()
		<-sigs
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.Main(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	cancel()
	os.Exit(code)
}
