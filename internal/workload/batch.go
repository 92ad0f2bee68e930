package workload

// Batched makes every request an embeddings batch of n inputs: request i of a level holds
// src's requests i·n … i·n+n−1 (each of its own exact length) as Batch, and InputTokens is
// their sum. Deterministic as src is.
func Batched(src Source, n int) Source { return &grouped{src: src, n: max(n, 1)} }

// Reranked makes every request a rerank query with n documents: request i's query is
// query's request i and its documents are docs' requests i·n … i·n+n−1; InputTokens counts
// the query and every document.
func Reranked(query, docs Source, n int) Source {
	return &grouped{src: docs, query: query, n: max(n, 1)}
}

type grouped struct {
	src, query Source
	n          int
}

func (g *grouped) Request(level, i int) Request {
	// The work is the prompt's prefill: a simulator runs it as a prompt with one output
	// token (nothing is generated, and no output length is sent).
	out := Request{OutputTokens: 1}
	parts := make([]string, g.n)
	for k := range g.n {
		r := g.src.Request(level, i*g.n+k)
		if k == 0 {
			out.Arrival, out.HasArrival = r.Arrival, r.HasArrival
		}
		parts[k] = r.Prompt
		out.InputTokens += r.InputTokens
	}
	if g.query == nil {
		out.Batch = parts
		return out
	}
	q := g.query.Request(level, i)
	out.Query, out.Documents = q.Prompt, parts
	out.InputTokens += q.InputTokens
	return out
}

func (g *grouped) Len() int {
	if n := g.src.Len(); n > 0 {
		return max(n/g.n, 1)
	}
	return 0
}

func (g *grouped) Info() Info { return Describe(g.src) }
