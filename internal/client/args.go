package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// ParseHeaders reads extra headers given as "Name: value", every malformed one an error of
// its own, shown cut short so that a secret in it is not echoed.
func ParseHeaders(hs []string) (http.Header, error) {
	out := http.Header{}
	var errs []error
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n") {
			errs = append(errs, fmt.Errorf("%q must be Name: value", redactHeaderArg(h)))
			continue
		}
		out.Add(k, strings.TrimSpace(v))
	}
	return out, errors.Join(errs...)
}

// redactHeaderArg keeps a malformed header argument's shape without echoing a secret.
func redactHeaderArg(h string) string {
	if len(h) > 12 {
		return h[:6] + "…"
	}
	return h
}

// ErrKeyAndFile is an API key given beside a file to read one from.
var ErrKeyAndFile = errors.New("give one, not both")

// APIKey is the API key given, else the one read from file (trimmed), else
// $OPENAI_API_KEY's. Both given is ErrKeyAndFile; any other error is the file's: it does
// not read, or holds no key.
func APIKey(key, file string) (string, error) {
	switch {
	case key != "" && file != "":
		return "", ErrKeyAndFile
	case key != "":
		return key, nil
	case file == "":
		return os.Getenv("OPENAI_API_KEY"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("%s is empty", file)
	}
	return k, nil
}

// ParseExtraBody reads the JSON object merged into every request body; "" is none.
func ParseExtraBody(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object: %s", s)
	}
	return m, nil
}
