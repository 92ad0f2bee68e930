package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/workload"
)

// inputs reads the flags of the APIs that send several inputs per request, images and tools.
func (r *resolver) inputs() {
	f, c := r.f, r.c
	c.NoStream = !f.stream
	embed, rerank := client.Embeddings(c.API), c.API == client.APIRerank
	if c.BatchSize < 1 {
		r.add(fmt.Errorf("--batch-size %d: must be at least 1", c.BatchSize))
	} else if c.BatchSize > 1 && !embed {
		r.add(fmt.Errorf("--batch-size is for the embeddings APIs (%s, %s), not %s", client.APIOpenAIEmbeddings, client.APIOllamaEmbed, c.API))
	}
	if c.Documents < 1 || c.QueryTokens < 1 {
		r.add(fmt.Errorf("--documents %d, --query-tokens %d: each must be at least 1", c.Documents, c.QueryTokens))
	}
	r.spec("NoStream,API", "Workload.Turns,API")
	if c.Images.N != 0 {
		var err error
		if c.Images.Width, c.Images.Height, err = workload.ParseImageSize(f.imageSize); err != nil {
			r.add(fmt.Errorf("--image-size: %w", err))
		}
		c.Images.Seed = c.Seed
		r.spec("Images", "Images,API")
	} else {
		c.Images = workload.ImageConfig{}
	}
	if !embed { // each API's own, none for the others
		c.BatchSize = 0
	}
	if !rerank {
		c.Documents, c.QueryTokens = 0, 0
	}
	r.tools()
}

// tools reads --tools, --tools-file and --tool-choice: the function definitions
// every request offers.
func (r *resolver) tools() {
	f, c := r.f, r.c
	if f.tools == 0 && c.ToolsFile == "" && f.toolChoice == "" {
		return
	}
	said := len(r.errs)
	switch {
	case f.tools < 0 || f.tools > workload.MaxTools:
		r.add(fmt.Errorf("--tools %d: must be in 0..%d", f.tools, workload.MaxTools))
	case f.tools > 0 && c.ToolsFile != "":
		r.add(errors.New("--tools and --tools-file: give one (generated definitions, or a file's)"))
	case c.ToolsFile != "":
		var err error
		if c.Tools, err = workload.LoadTools(c.ToolsFile); err != nil {
			r.add(fmt.Errorf("--tools-file: %w", err))
		}
	default:
		c.Tools = workload.GenerateTools(f.tools, c.Seed)
	}
	if !slices.Contains(client.ToolAPIs, c.API) {
		r.add(fmt.Errorf("--tools, --tools-file are for %s, not %s", strings.Join(client.ToolAPIs, ", "), c.API))
	} else if f.toolChoice != "" && !slices.Contains(client.ToolChoiceAPIs, c.API) {
		r.add(fmt.Errorf("--tool-choice: %s takes no tool_choice (the model decides); leave it out", c.API))
	}
	c.ToolChoice = workload.ToolChoice(f.toolChoice)
	if len(r.errs) == said {
		if err := workload.ValidateTools(c.Tools, c.ToolChoice); err != nil {
			r.add(fmt.Errorf("--tool-choice: %w", err))
		}
	}
}
