package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/specflags"
	"github.com/llmbench/llmbench/internal/workload"
)

func newDatasetCmd(stdio Stdio) *cobra.Command {
	var (
		f           specflags.Flags
		output, url string
		requests    int
	)
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Write a workload's requests, exactly as they would be sent, to a JSONL file",
		Long: `dataset builds the requests of a workload (prompts, exact input and output token counts,
and arrival offsets for traces) and writes them as JSONL, so a workload can be inspected,
shared, and fed back with --dataset jsonl:FILE.`,
		Example: `  llmbench dataset --input-tokens uniform:128:1024 --output-tokens 256 --requests 100 \
    --output prompts.jsonl
  llmbench dataset --dataset sharegpt:ShareGPT_V3.json --tokenizer ./tokenizer.json --requests 500 \
    --output sharegpt.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []error
			if output == "" {
				errs = append(errs, errors.New("--output FILE.jsonl is required"))
			}
			wc, tokSpec, err := f.Workload()
			if errs = append(errs, fielderr.Split(err)...); len(errs) > 0 {
				return usageError(errors.Join(errs...))
			}
			tok, err := loadURLTokenizer(cmd.Context(), tokSpec, url)
			if err != nil {
				return err
			}
			src, err := workload.New(wc, tok)
			if err != nil {
				return usageError(err)
			}
			n := workload.RequestCount(src, requests)
			write := func(w io.Writer) error { return workload.WriteRequests(cmd.Context(), w, src, n) }
			if output == "-" {
				return write(stdio.Out)
			}
			if err := atomicfile.Write(output, write); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "wrote %d requests to %s\n", n, output)
			return nil
		},
	}
	fl := cmd.Flags()
	f.BindWorkload(fl)
	fl.StringVar(&url, "url", "", "server for --tokenizer server")
	fl.IntVar(&requests, "requests", 0, "requests to write (default: every row of a dataset, or 100)")
	fl.StringVar(&output, "output", "", "output JSONL file (- for standard output)")
	return cmd
}
