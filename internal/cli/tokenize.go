package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
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
			write := func(ids []int) {
				b := make([]byte, 0, 8*len(ids)+2)
				b = append(b, '[')
				for i, id := range ids {
					if i > 0 {
						b = append(b, ',')
					}
					b = strconv.AppendInt(b, int64(id), 10)
				}
				out.Write(append(b, ']', '\n'))
			}
			if !jsonl {
				text, err := io.ReadAll(stdio.In)
				if err != nil {
					return err
				}
				write(tok.Encode(string(text)))
				return nil
			}
			sc := bufio.NewScanner(stdio.In)
			sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
			for line := 1; sc.Scan(); line++ {
				var s string
				if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
					return usageError(fmt.Errorf("stdin line %d: not a JSON string: %v", line, err))
				}
				write(tok.Encode(s))
			}
			return sc.Err()
		},
	}
	cmd.Flags().StringVar(&spec, "tokenizer", "o200k_base", "o200k_base, cl100k_base, a tokenizer.json path, a HuggingFace model id in the local cache, or server (with --url)")
	cmd.Flags().StringVar(&url, "url", "", "server for --tokenizer server (its /tokenize endpoint)")
	cmd.Flags().BoolVar(&jsonl, "jsonl", false, "each input line is a JSON string; print one array per line")
	return cmd
}
