// Command clientprof runs an llmbench command in-process under Go's profilers, to see where
// the client's time goes at high stream counts (bench/fidelity.sh, docs/performance.md):
//
//	go build -o /tmp/clientprof ./bench/clientprof
//	/tmp/clientprof -cpuprofile client.pprof -- run --url http://127.0.0.1:8000 --concurrency 1000 ...
//	go tool pprof -top -nodecount 40 /tmp/clientprof client.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"

	"github.com/llmbench/llmbench/internal/cli"
)

func main() {
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the command to this file")
	heap := flag.String("memprofile", "", "write an allocation profile at the end to this file")
	mutex := flag.String("mutexprofile", "", "write a mutex contention profile at the end to this file")
	block := flag.String("blockprofile", "", "write a blocking profile at the end to this file")
	flag.Parse()
	os.Exit(run(*cpu, *heap, *mutex, *block, flag.Args()))
}

func run(cpu, heap, mutex, block string, args []string) int {
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if mutex != "" {
		runtime.SetMutexProfileFraction(5)
	}
	if block != "" {
		runtime.SetBlockProfileRate(10_000) // one sample per 10 µs blocked
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code := cli.Main(ctx, args, cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	for name, path := range map[string]string{"allocs": heap, "mutex": mutex, "block": block} {
		if path == "" {
			continue
		}
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup(name).WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}
