package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/workload"
)

func newDatasetCmd(stdio Stdio) *cobra.Command {
	var (
		f        benchFlags
		output   string
		requests int
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
			wc, err := f.datasetWorkload(output)
			if err != nil {
				return err
			}
			tok, err := loadURLTokenizer(cmd.Context(), f.spec.Tokenizer, f.url)
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
	f.bindWorkload(newSpecFlagSet(fl))
	fl.StringVar(&f.url, "url", "", "server for --tokenizer server")
	fl.IntVar(&requests, "requests", 0, "requests to write (default: every row of a dataset, or 100)")
	fl.StringVar(&output, "output", "", "output JSONL file (- for standard output)")
	return cmd
}

// datasetWorkload is the workload dataset's flags describe, checked: every problem at once.
func (f *benchFlags) datasetWorkload(output string) (workload.Config, error) {
	var errs []error
	if output == "" {
		errs = append(errs, errors.New("--output FILE.jsonl is required"))
	}
	in, out, errIn, errOut := f.lengths()
	for _, err := range []error{errIn, errOut} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	wc := f.spec.Workload // the workload flags bound to it
	wc.InputTokens, wc.OutputTokens, wc.Seed = in, out, f.spec.Seed
	if len(errs) == 0 {
		if err := workloadError(wc, wc.Validate()); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return wc, usageError(errors.Join(errs...))
	}
	return wc, nil
}
