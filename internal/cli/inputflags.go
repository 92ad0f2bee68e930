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
	embed, rerank := client.Embeddings(f.api), f.api == client.APIRerank
	if f.batchSize < 1 {
		r.add(fmt.Errorf("--batch-size %d: must be at least 1", f.batchSize))
	} else if f.batchSize > 1 && !embed {
		r.add(fmt.Errorf("--batch-size is for the embeddings APIs (%s, %s), not %s", client.APIOpenAIEmbeddings, client.APIOllamaEmbed, f.api))
	}
	if f.documents < 1 || f.queryTokens < 1 {
		r.add(fmt.Errorf("--documents %d, --query-tokens %d: each must be at least 1", f.documents, f.queryTokens))
	}
	r.spec("NoStream,API", "Workload.Turns,API")
	if f.images != 0 {
		w, h, err := workload.ParseImageSize(f.imageSize)
		if err != nil {
			r.add(fmt.Errorf("--image-size: %w", err))
		}
		c.Images = workload.ImageConfig{N: f.images, Width: w, Height: h, Format: f.imageFormat, Seed: f.seed}
		r.spec("Images", "Images,API")
	}
	if embed {
		c.BatchSize = f.batchSize
	}
	if rerank {
		c.Documents, c.QueryTokens = f.documents, f.queryTokens
	}
	r.tools()
}

// tools reads --tools, --tools-file and --tool-choice: the function definitions
// every request offers.
func (r *resolver) tools() {
	f, c := r.f, r.c
	if f.tools == 0 && f.toolsFile == "" && f.toolChoice == "" {
		return
	}
	said := len(r.errs)
	switch {
	case f.tools < 0 || f.tools > workload.MaxTools:
		r.add(fmt.Errorf("--tools %d: must be in 0..%d", f.tools, workload.MaxTools))
	case f.tools > 0 && f.toolsFile != "":
		r.add(errors.New("--tools and --tools-file: give one (generated definitions, or a file's)"))
	case f.toolsFile != "":
		tools, err := workload.LoadTools(f.toolsFile)
		if err != nil {
			r.add(fmt.Errorf("--tools-file: %w", err))
		}
		c.Tools, c.ToolsFile = tools, f.toolsFile
	default:
		c.Tools = workload.GenerateTools(f.tools, f.seed)
	}
	if !slices.Contains(client.ToolAPIs, f.api) {
		r.add(fmt.Errorf("--tools, --tools-file are for %s, not %s", strings.Join(client.ToolAPIs, ", "), f.api))
	} else if f.toolChoice != "" && !slices.Contains(client.ToolChoiceAPIs, f.api) {
		r.add(fmt.Errorf("--tool-choice: %s takes no tool_choice (the model decides); leave it out", f.api))
	}
	c.ToolChoice = workload.ToolChoice(f.toolChoice)
	if len(r.errs) == said {
		if err := workload.ValidateTools(c.Tools, c.ToolChoice); err != nil {
			r.add(fmt.Errorf("--tool-choice: %w", err))
		}
	}
}
