package record

import (
	"net/http"
	"strings"
)

// Hint says what to do about a failure of this kind, status and message, or "" when
// there is nothing to add to the message. It speaks in llmbench's flags: summaries and the
// console show it beside the first message of each kind of failure.
func (e *Error) Hint() string {
	msg := strings.ToLower(e.Message)
	switch e.Kind {
	case KindConnect:
		switch {
		case strings.Contains(msg, "connection refused"):
			return "nothing listens there: is the server up, and is --url its address and port?"
		case strings.Contains(msg, "no such host"):
			return "the host name does not resolve: check --url"
		case strings.Contains(msg, "certificate"):
			return "the server's TLS certificate is not trusted: give its CA with --ca-cert (or --insecure to skip the check)"
		case strings.Contains(msg, "time_wait") || strings.Contains(msg, "local port"):
			return "keep connections alive (--keep-alive), lower the rate, or widen net.ipv4.ip_local_port_range"
		}
	case KindHTTPStatus:
		switch e.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			return "the server wants an API key, or refused the one given: --api-key, --api-key-file or $OPENAI_API_KEY"
		case http.StatusNotFound:
			if strings.Contains(msg, "model") {
				return "the server does not serve that model: pick one of its /v1/models with --model"
			}
			return "the server has no such endpoint: check --api (and --url: a base URL, without the API path)"
		case http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return "the server does not speak this API: check --api"
		case http.StatusRequestEntityTooLarge:
			return "the request is too large for the server: fewer --input-tokens"
		case http.StatusTooManyRequests:
			return "the server is rate limiting: lower the load (llmbench never re-sends it; Retry-After is recorded)"
		case http.StatusServiceUnavailable:
			return "the server is overloaded or starting: lower the load, or wait until it is ready"
		case http.StatusBadRequest:
			if strings.Contains(msg, "context") || strings.Contains(msg, "too long") || strings.Contains(msg, "maximum") {
				return "prompt plus output exceed the model's context: fewer --input-tokens or --output-tokens"
			}
		}
	case KindTimeout:
		return "a request took longer than --timeout: raise it, or lower the load"
	case KindIdleTimeout:
		return "the stream went silent for --idle-timeout: the server stalled, or raise it"
	case KindMalformedEvent:
		if strings.Contains(msg, "not an event stream") {
			return "the server ignored \"stream\": true: check --api"
		}
	case KindEmpty:
		return "the server generated nothing: with --ignore-eos=false a model may stop at once"
	}
	return ""
}
