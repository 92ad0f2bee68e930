package metrics

import "github.com/llmbench/llmbench/internal/record"

// CachedTokens is what the server said, request by request, it served of the prompts from
// its prompt cache (records' cached_tokens: usage's prompt_tokens_details.cached_tokens,
// llama.cpp's timings.cache_n), over a level's completed measured requests. A completed
// request whose server said nothing counts 0 cached tokens: vLLM and SGLang leave the
// field out when nothing was cached, so the figures then match their own /metrics.
type CachedTokens struct {
	// Requests is the completed requests whose server said what it served from its cache.
	Requests int `json:"requests"`
	// Total is the prompt tokens it said it served from its cache.
	Total int64 `json:"total"`
	// Mean is Total per completed request.
	Mean float64 `json:"mean"`
	// HitRate is Total over the completed requests' prompt tokens by the server's count
	// (record.Record.PromptCache): the share of prompt tokens the cache served.
	HitRate float64 `json:"hit_rate"`
}

// cachedAcc accumulates a level's CachedTokens.
type cachedAcc struct {
	completed, said int
	cached, prompt  int64
}

// add counts a completed measured request.
func (c *cachedAcc) add(r *record.Record) {
	cached, prompt, said := r.PromptCache()
	c.completed++
	c.prompt += int64(prompt)
	if said {
		c.said++
		c.cached += int64(cached)
	}
}

// result is the level's figures; nil when no request's server said anything of its cache.
func (c *cachedAcc) result() *CachedTokens {
	if c.said == 0 {
		return nil
	}
	ct := &CachedTokens{Requests: c.said, Total: c.cached, Mean: float64(c.cached) / float64(c.completed)}
	if c.prompt > 0 {
		ct.HitRate = float64(c.cached) / float64(c.prompt)
	}
	return ct
}
