package cli

import (
	"github.com/llmbench/llmbench/internal/bench"
)

// describe is what cfg asked for, for summary.json's load and workload.
func (c *benchConfig) describe() bench.Spec {
	return bench.Spec{Live: c.live, InProcess: c.inProcess, Levels: c.levels, Base: c.base,
		Requests: c.requests, Search: c.search, Repeat: c.repeat, StopOnSaturation: c.stopOnSaturation, SearchMax: c.searchMax, StartAt: c.startAt,
		SimProfile: c.simProfile, Timeout: c.timeout, IdleTimeout: c.idleTimeout, KeepAlive: c.keepAlive, TestRequest: c.testRequest,
		IgnoreEOS: c.ignoreEOS, Insecure: c.insecure, HTTP2: c.http2, ReadStamps: c.readStamps,
		Headers: c.headers, ExtraBody: c.extraBody, Temperature: c.temperature, TopP: c.topP,
		Workload: c.workload, Tokenizer: c.tokenizer,
		NoStream: c.noStream, BatchSize: c.batchSize, Documents: c.documents, QueryTokens: c.queryTokens,
		Tools: c.tools, ToolChoice: c.toolChoice}
}
