package specflags

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/suggest"
)

// applyConfig sets the flags of fs from a run configuration file (--config): a YAML
// mapping of flag names to values, for repeatable scenarios. A flag given on the command
// line wins over the file. Secrets are refused in it (they end up in repositories): the
// API key goes in --api-key-file or $OPENAI_API_KEY, secret headers on the command line.
// Every problem is reported at once, each naming its key and line.
func applyConfig(fs *pflag.FlagSet, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("--config %s: not YAML: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("--config %s: want a mapping of flag names to values, like `concurrency: 1,4,16`", path)
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	var errs []error
	bad := func(n *yaml.Node, format string, a ...any) {
		errs = append(errs, fmt.Errorf("--config %s:%d: %s", path, n.Line, fmt.Sprintf(format, a...)))
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := strings.TrimPrefix(k.Value, "--")
		f := fs.Lookup(name)
		switch {
		case name == "config":
			bad(k, "a config file cannot name another")
			continue
		case name == "api-key":
			bad(k, "api-key: no secrets in a config file; use api-key-file or $OPENAI_API_KEY")
			continue
		case f == nil:
			bad(k, "%q is not a flag of this command%s", name, suggest.DidYouMean(name, names))
			continue
		case f.Changed:
			continue // the command line wins
		}
		var vals []string
		switch v.Kind {
		case yaml.ScalarNode:
			vals = []string{v.Value}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode {
					bad(e, "%s: a list of plain values", name)
				}
				vals = append(vals, e.Value)
			}
			if f.Value.Type() != "stringArray" { // --concurrency: [1, 4, 16] is "1,4,16"
				vals = []string{strings.Join(vals, ",")}
			}
		default:
			bad(v, "%s: a value or a list of values", name)
			continue
		}
		if name == "header" {
			for _, h := range vals {
				if k, _, _ := strings.Cut(h, ":"); client.SecretHeader(strings.TrimSpace(k)) {
					bad(v, "header %s: no secrets in a config file; give it with --header", strings.TrimSpace(k))
				}
			}
		}
		for _, s := range vals {
			if err := setStrict(fs, name, s); err != nil {
				bad(v, "%s: %v", name, err)
			}
		}
	}
	return errors.Join(errs...)
}
