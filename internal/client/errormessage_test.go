package client

import (
	"strings"
	"testing"
)

// TestErrorMessage: the message of each server's error body, and an HTML error page (a
// plain web server's, a proxy's) as its gist, not its markup.
func TestErrorMessage(t *testing.T) {
	// Python's http.server answering a POST (a plain file server at --url).
	const pyHTTP = `<!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <style type="text/css">body { color: red; }</style>
        <title>Error response</title>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: 501</p>
        <p>Message: Unsupported method (&#x27;POST&#x27;).</p>
        <p>Error code explanation: 501 - Server does not support this operation.</p>
    </body>
</html>
`
	for _, c := range []struct{ body, want string }{
		{`{"error":{"message":"The model does not exist","type":"invalid_request_error"}}`, "The model does not exist"},
		{`{"error":"model 'x' not found"}`, "model 'x' not found"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{"plain words\n", "plain words"},
		{pyHTTP, "an HTML page: Error response Error response Error code: 501 Message: Unsupported method ('POST'). Error code explanation: 501 - Server does not support this operation."},
		{"<html><body><script>var x = '<b>';</script><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>", "an HTML page: 502 Bad Gateway nginx"},
		// JSON that quotes an upstream page is the JSON's message.
		{`{"error":{"message":"upstream said <html><body>502</body></html>"}}`, "upstream said <html><body>502</body></html>"},
	} {
		if got := ErrorMessage([]byte(c.body)); got != c.want {
			t.Errorf("ErrorMessage(%.40q) = %q, want %q", c.body, got, c.want)
		}
	}
	long := "<html><body><p>" + strings.Repeat("é", 500) + "</p></body></html>"
	if got := ErrorMessage([]byte(long)); len(got) > len("an HTML page: ")+maxHTMLText+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "an HTML page: éé") {
		t.Errorf("a long page: %d bytes %q…", len(got), got[:40])
	}
}
