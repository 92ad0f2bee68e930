package specflags

import (
	"fmt"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
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
	r.add(fieldError(c.SetImages(f.imageSize)))
	r.spec("Images", "Images,API")
	if !embed { // each API's own, none for the others
		c.BatchSize = 0
	}
	if !rerank {
		c.Documents, c.QueryTokens = 0, 0
	}
	r.tools()
}

// tools reads --tools, --tools-file and --tool-choice (bench.Spec.SetTools).
func (r *resolver) tools() {
	for _, err := range fielderr.Split(r.c.SetTools(r.f.tools, r.c.ToolChoice)) {
		r.add(fieldError(err))
	}
}
