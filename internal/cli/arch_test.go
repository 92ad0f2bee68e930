package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// parseDir parses the non-test Go files of dirs.
func parseDir(t *testing.T, dirs ...string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	return fset, files
}

// longFuncsAllowed are the functions of internal/cli still over the limit, each with why.
var longFuncsAllowed = map[string]string{}

// TestCLIIsWiring: internal/cli, and the Spec's flags it binds (internal/specflags), map
// flags to the packages that do the work. Their functions are short; they run no level
// themselves (bench runs the ladder) and no command runs another.
func TestCLIIsWiring(t *testing.T) {
	const maxLines = 80
	fset, files := parseDir(t, ".", "../specflags")
	for _, f := range files {
		name := filepath.Base(fset.Position(f.Pos()).Filename)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				lines := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
				if _, ok := longFuncsAllowed[name+":"+n.Name.Name]; lines > maxLines && !ok {
					t.Errorf("%s: %s is %d lines, more than %d: split it into named steps", name, n.Name.Name, lines, maxLines)
				}
			case *ast.CallExpr:
				call := ""
				switch fn := n.Fun.(type) {
				case *ast.Ident:
					call = fn.Name
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok {
						call = x.Name + "." + fn.Sel.Name
					}
				}
				switch call {
				case "load.Run", "load.RunVirtual", "search.Largest", "search.Bisect":
					t.Errorf("%s: %s calls %s: running levels is internal/bench's", name, fset.Position(n.Pos()), call)
				case "newRunCmd", "newSimulateCmd", "newCalibrateCmd", "newPlanCmd":
					if name != "cli.go" {
						t.Errorf("%s: %s calls %s: a command runs the library, not another command", name, fset.Position(n.Pos()), call)
					}
				}
			}
			return true
		})
	}
}

// TestLibraryImports: the benchmark library and the packages on it know nothing of the
// command line (cli's, or the Spec's flags in specflags), and plan sizes deployments
// without calibrate.
func TestLibraryImports(t *testing.T) {
	const mod = "github.com/llmbench/llmbench/internal/"
	for dir, refused := range map[string][]string{
		"../bench":     {"github.com/spf13/cobra", "github.com/spf13/pflag", mod + "cli", mod + "specflags", mod + "calibrate", mod + "plan"},
		"../calibrate": {"github.com/spf13/cobra", "github.com/spf13/pflag", mod + "cli", mod + "specflags"},
		"../compare":   {"github.com/spf13/cobra", "github.com/spf13/pflag", mod + "cli", mod + "specflags"},
		"../plan":      {"github.com/spf13/cobra", "github.com/spf13/pflag", mod + "cli", mod + "specflags", mod + "calibrate"},
	} {
		fset, files := parseDir(t, dir)
		for _, f := range files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, r := range refused {
					if path == r {
						t.Errorf("%s imports %s", fset.Position(imp.Pos()).Filename, path)
					}
				}
			}
		}
	}
}

// TestLeafPackages: the JSON types of summary.json's description, the terminal's text, atomic
// writes and field errors import no package of this module, so any package may use them.
func TestLeafPackages(t *testing.T) {
	for _, dir := range []string{"../rundesc", "../console", "../atomicfile", "../fielderr"} {
		fset, files := parseDir(t, dir)
		for _, f := range files {
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "github.com/llmbench/llmbench/") {
					t.Errorf("%s imports %s", fset.Position(imp.Pos()).Filename, path)
				}
			}
		}
	}
}
