package testtier

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// .ci/run selects the accuracy tier by name: its list must name exactly the tests that call
// Accuracy, or a new one would never run in CI (or a removed one leave a stale name).
func TestCIRunsEveryAccuracyTest(t *testing.T) {
	root := "../.."
	ci, err := os.ReadFile(filepath.Join(root, ".ci/run"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^accuracy_tests='\^\(([^)]*)\)\$'$`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run has no accuracy_tests='^(…)$' line")
	}
	listed := map[string]bool{}
	for _, name := range strings.Split(string(m[1]), "|") {
		listed[name] = true
	}
	calls := map[string]string{} // test → file
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Accuracy" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "testtier" {
						calls[fn.Name.Name] = path
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 {
		t.Fatal("no test calls testtier.Accuracy: the walk found nothing")
	}
	for name, file := range calls {
		if !listed[name] {
			t.Errorf("%s (%s) is in the accuracy tier but not in .ci/run's accuracy_tests", name, file)
		}
	}
	for name := range listed {
		if calls[name] == "" {
			t.Errorf(".ci/run's accuracy_tests names %s, which calls no testtier.Accuracy", name)
		}
	}
}
