package cli

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/tokenizer"
)

func newTokenizeCmd(stdio Stdio) *cobra.Command {
	var (
		spec, url string
		jsonl     bool
	)
	cmd := &cobra.Command{
		Use:   "tokenize",
		Short: "Print the token ids of standard input's text as a JSON array",
		Example: `  echo -n "Hello world" | llmbench tokenize --tokenizer o200k_base
  llmbench tokenize --tokenizer ./tokenizer.json --jsonl < texts.jsonl
  llmbench tokenize --tokenizer meta-llama/Llama-3.1-8B < prompt.txt   # the local HF cache's`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := loadURLTokenizer(cmd.Context(), spec, url)
			if err != nil {
				return err
			}
			out := bufio.NewWriter(stdio.Out)
			defer out.Flush()
			if !jsonl {
				return tokenizer.EncodeText(out, stdio.In, tok)
			}
			err = tokenizer.EncodeJSONLines(out, stdio.In, tok)
			var line *tokenizer.LineError
			if errors.As(err, &line) {
				return usageError(fmt.Errorf("stdin %w", line))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&spec, "tokenizer", "o200k_base", "o200k_base, cl100k_base, a tokenizer.json path, a HuggingFace model id in the local cache, or server (with --url)")
	cmd.Flags().StringVar(&url, "url", "", "server for --tokenizer server (its /tokenize endpoint)")
	cmd.Flags().BoolVar(&jsonl, "jsonl", false, "each input line is a JSON string; print one array per line")
	return cmd
}
