package specflags

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/suggest"
)

// bindTarget binds run's target flags: the server, its API's path and request options,
// credentials and transport (simulate has none).
func (f *Flags) bindTarget(fs specFlagSet, d bench.Spec) {
	fs.Var(&urlsValue{first: &f.url, more: &f.moreURLs}, "url", "base URL of the server, e.g. http://127.0.0.1:8000 (default: the built-in simulator, in-process); repeatable: the run balances over the endpoints by --balance")
	fs.spec("url", "URL,More", func(c specRun) []string { return append(Str(c.URL), c.More...) })
	t := &f.spec.Server
	specVar(fs, fs.StringVar, &t.Model, "model", "", "model name (default: the first id from /v1/models)", "Model")
	specVar(fs, fs.StringVar, &t.APIKey, "api-key", "", "API key sent as a bearer token (default: $OPENAI_API_KEY)", "APIKey")
	specVar(fs, fs.StringVar, &f.apiKeyFile, "api-key-file", "", "read the API key from this file", "APIKey", none)
	specVar(fs, fs.StringArrayVar, &f.headers, "header", nil, "extra HTTP header `K:V` (repeatable)", "Headers", headerArgs)
	specVar(fs, fs.StringVar, &f.extraBody, "extra-body", "", "JSON object merged into every request body", "ExtraBody",
		func(c specRun) []string { return jsonArg(c.ExtraBody) })
	specVar(fs, fs.IntVar, &f.spec.Images.N, "images", 0, "chat and Responses: synthetic images per request, sent as data URLs in image content parts (deterministic by --seed)", "Images.N")
	specVar(fs, fs.StringVar, &f.imageSize, "image-size", "512x512", "with --images: each image's size `WxH` in pixels", "Images.Width,Images.Height", func(c specRun) []string {
		return when(c.Images.N > 0, fmt.Sprintf("%dx%d", c.Images.Width, c.Images.Height))
	})
	specVar(fs, fs.StringVar, &f.spec.Images.Format, "image-format", "png", "with --images: png or jpeg", "Images.Format")
	specVar(fs, fs.StringVar, &t.Endpoint, "endpoint", "", "the API's path on the server, e.g. /rerank (default: the API's own, e.g. /v1/rerank)", "Endpoint")
	specVar(fs, fs.BoolVar, &t.IgnoreEOS, "ignore-eos", d.IgnoreEOS, "send ignore_eos so outputs have exactly --output-tokens (turn off for hosted APIs that reject it)", "IgnoreEOS")
	specVar(fs, fs.Float64Var, &f.temperature, "temperature", 0, "sampling temperature to send (default: none sent, the server's own)", "Temperature",
		func(c specRun) []string { return ptrArg(c.Temperature) })
	specVar(fs, fs.Float64Var, &f.topP, "top-p", 0, "nucleus sampling top_p to send, in (0, 1] (default: none sent)", "TopP",
		func(c specRun) []string { return ptrArg(c.TopP) })
	specVar(fs, fs.DurationVar, &t.Timeout, "timeout", d.Timeout, "per-request time limit (whole request)", "Timeout")
	specVar(fs, fs.DurationVar, &t.IdleTimeout, "idle-timeout", d.IdleTimeout, "fail a request when its stream sends no bytes for this long", "IdleTimeout")
	specVar(fs, fs.StringVar, &t.CACert, "ca-cert", "", "PEM file with an extra CA certificate for https targets", "CACert")
	specVar(fs, fs.BoolVar, &t.Insecure, "insecure", false, "skip TLS certificate verification (recorded in the summary)", "Insecure")
	specVar(fs, fs.BoolVar, &t.HTTP2, "http2", false, "allow HTTP/2 (h2 over TLS, h2c over plain HTTP); default HTTP/1.1, one connection per stream", "HTTP2")
	specVar(fs, fs.BoolVar, &t.KeepAlive, "keep-alive", d.KeepAlive, "reuse connections between requests; false opens a new one per request, as vLLM's client does (a request that meets a connection the server closed is re-sent once either way: docs/real-servers.md)", "KeepAlive")
	specVar(fs, fs.BoolVar, &t.TestRequest, "test-request", d.TestRequest, "send one request (the first level's first) before measuring, as vLLM's client does: a failure stops the run with its error (exit 4); an answer warms the server; it is not recorded", "TestRequest")
	specVar(fs, fs.BoolVar, &t.ReadStamps, "read-stamps", false, "time token events when llmbench reads them, not by the kernel's receive time of their bytes (the default on Linux over HTTP/1.1)", "ReadStamps")
	specVar(fs, fs.BoolVar, &t.SaveText, "save-text", false, "keep each response's generated text in records.jsonl (\"text\") and in --result-format vllm's generated_texts; records grow by the text's size", "SaveText")
	f.bindScrapes(fs)
	specVar(fs, fs.StringVar, &f.chatTemplate, "chat-template", "", "the model's chat template, which the chat APIs' prompts are sized with so that the server's prompt_tokens is --input-tokens: a .jinja file, a tokenizer_config.json or a model folder (default: the one beside --tokenizer's tokenizer.json, if any); none: size message text alone", "ChatTemplate", chatTemplateArg)
}

// bindScrapes binds the flags of what a live run scrapes beside the benchmark: the
// server's /metrics and the GPU exporters'.
func (f *Flags) bindScrapes(fs specFlagSet) {
	specVar(fs, fs.StringVar, &f.spec.Telemetry.MetricsURL, "metrics-url", "", `Prometheus endpoint to scrape during each level (default: the target's /metrics when it answers; "none" disables)`, "Telemetry.MetricsURL")
	specVar(fs, fs.DurationVar, &f.spec.Telemetry.Interval, "metrics-interval", bench.DefaultInterval, "how often to scrape --metrics-url and --gpu-metrics", "Telemetry.Interval")
	specVar(fs, fs.StringArrayVar, &f.gpuMetrics, "gpu-metrics", nil, "`URL` of a GPU exporter's /metrics (NVIDIA dcgm-exporter, AMD device-metrics-exporter) to scrape during each level: power, energy, J per output token, utilisation (repeatable: one per node)", "Telemetry.GPUs,Telemetry.NoGPU",
		func(c specRun) []string { return append(when(c.Telemetry.NoGPU, "none"), c.Telemetry.GPUs...) }) // none: not the local GPUs either
}

// bindBalance binds --balance (run: over several --url; simulate: the profile's replicas)
// and run's --session-header.
func (f *Flags) bindBalance(fs specFlagSet, live bool) {
	how := "the simulated deployment's router over its replicas (deployment.router), as run --balance spreads requests over several --url"
	if live {
		how = "with several --url: how requests are spread over them"
		specVar(fs, fs.StringVar, &f.sessionHeader, "session-header", route.SessionHeader, "the header each request of a conversation or agentic task carries its session key in, with --balance session (or given, for a router in front of one --url); \"\" sends none", "SessionHeader", sessionHeaderArgs)
	}
	specVar(fs, fs.StringVar, &f.balance, "balance", "", how+": round-robin, least-outstanding, or session (a conversation's or agentic task's requests to one, by a hash of its key) (default round-robin; simulate: the profile's)", "Balance",
		func(c specRun) []string { return Str(c.Balance) })
}

// urlsValue is --url, repeatable: the first URL, and any given after it.
type urlsValue struct {
	first *string
	more  *[]string
	n     int
}

func (v *urlsValue) Set(s string) error {
	if v.n == 0 {
		*v.first = s
	} else {
		*v.more = append(*v.more, s)
	}
	v.n++
	return nil
}

func (v *urlsValue) String() string {
	if v.first == nil || *v.first == "" {
		return ""
	}
	return strings.Join(append([]string{*v.first}, *v.more...), ",")
}

func (v *urlsValue) Type() string { return "url" }

// APIKey is client.APIKey's key, its errors said as the flags'.
func APIKey(key, file string) (string, error) {
	k, err := client.APIKey(key, file)
	switch {
	case errors.Is(err, client.ErrKeyAndFile):
		return "", fmt.Errorf("--api-key and --api-key-file: %w", err)
	case err != nil:
		return "", fmt.Errorf("--api-key-file: %w", err)
	}
	return k, nil
}

// Headers reads --header, each malformed one said under the flag.
func Headers(hs []string) (http.Header, error) {
	h, err := client.ParseHeaders(hs)
	var errs []error
	for _, e := range fielderr.Split(err) {
		errs = append(errs, fmt.Errorf("--header: %w", e))
	}
	return h, errors.Join(errs...)
}

// balancing reads --balance and --session-header: run's spread over several --url,
// simulate's router over the profile's replicas (simProfile applies it).
func (r *resolver) balancing() {
	f := r.f
	r.c.SetBalance(f.balance, f.sessionHeader, f.fs != nil && f.fs.Changed("session-header"))
	r.spec("Balance", "Balance,More")
	r.spec("SessionHeader")
}

// target reads run's target flags: the server, its API, credentials and transport.
func (r *resolver) target() {
	f, c := r.f, r.c
	r.add(NamedFlags(c.SetURLs(f.url, f.moreURLs), specFlagNames))
	if api := c.API; !slices.Contains(client.APIs(), api) {
		hint := suggest.DidYouMean(api, client.APIs())
		switch strings.ToLower(api) {
		case "vllm", "sglang", "openai", "lmdeploy", "trt-llm", "tensorrt-llm", "llama.cpp", "llama-server":
			hint = " (--api names the API, not the server: " + api + " serves openai-chat and openai-completions)"
		}
		r.add(fmt.Errorf("--api: %q is not one of %s%s", api, strings.Join(client.APIs(), ", "), hint))
	} else if f.url == "" && !slices.Contains(bench.SimAPIs, api) {
		r.add(fmt.Errorf("--api %s needs --url: the built-in simulator speaks %s", api, strings.Join(bench.SimAPIs, ", ")))
	}
	var err error
	c.APIKey, err = APIKey(c.APIKey, f.apiKeyFile)
	r.add(err)
	c.Headers, err = Headers(f.headers)
	r.add(err)
	if c.ExtraBody, err = client.ParseExtraBody(f.extraBody); err != nil {
		r.add(fmt.Errorf("--extra-body: %w", err))
	}
	r.spec("Timeout", "IdleTimeout", "Telemetry.Interval")
	for _, err := range fielderr.Split(c.Telemetry.SetGPUs(f.gpuMetrics)) {
		if field := (*fielderr.Error)(nil); errors.As(err, &field) && field.Field == "Telemetry.NoGPU" {
			err = fmt.Errorf("--gpu-metrics none: %w", field.Err)
		}
		r.add(NamedFlags(err, specFlagNames))
	}
}
