package report

import "github.com/llmbench/llmbench/internal/record"

// cacheHitShare is the share of a prompt beyond its fixed prefix that, served from the
// server's prompt cache, makes a request a prefix-cache hit (docs/metrics.md).
const cacheHitShare = 0.10

// cacheCount is a level's measured requests whose server said what it served from its
// prompt cache, and the hits among them.
type cacheCount struct{ said, hits int }

// PrefixCacheHit reports whether the server served more than 10% of r's prompt beyond its
// fixed prefix (the tokens every prompt shares: fixed) from its prompt cache; said is
// false when the server did not say (record.Record.HasCachedPromptTokens).
func PrefixCacheHit(r *record.Record, fixed int) (hit, said bool) {
	cached, prompt, said := r.PromptCache()
	if !said {
		return false, false
	}
	beyond := prompt - fixed
	return beyond > 0 && float64(cached-fixed) > cacheHitShare*float64(beyond), true
}

// countCache counts r, a measured request, toward its level's prefix-cache hits.
func (c *Collector) countCache(r *record.Record) {
	if r.Warmup {
		return
	}
	hit, said := PrefixCacheHit(r, c.SharedPrefix)
	if !said {
		return
	}
	if c.cache == nil {
		c.cache = map[int]*cacheCount{}
	}
	n := c.cache[r.Level]
	if n == nil {
		n = &cacheCount{}
		c.cache[r.Level] = n
	}
	n.said++
	if hit {
		n.hits++
	}
}

// PrefixCacheHits is level i's measured requests that were prefix-cache hits
// (PrefixCacheHit), for levels[i].prefix_cache_hits; nil when its server said nothing per
// request of what it served from its cache.
func (c *Collector) PrefixCacheHits(i int) *int {
	n := c.cache[i]
	if n == nil {
		return nil
	}
	hits := n.hits
	return &hits
}
