package checkdocs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository's top directory: go test runs a test in its package's directory.
const repoRoot = "../.."

// codeRoots are the top folders whose Go package directories docs/layout.md must each name.
var codeRoots = []string{"cmd", "pkg", "test", "hack"}

// layoutPathRE matches a path in backquotes in docs/layout.md that starts with one of the
// repository's top folders, e.g. `pkg/controller/cloneset` or `pkg/generated/...`.
var layoutPathRE = regexp.MustCompile("`((?:cmd|pkg|test|hack|artifacts|docs)(?:/[^`\\s]*)?)`")

// goPackageDirs lists, relative to the repository root, every directory under codeRoots holding a
// .go file (test files included), skipping testdata and hidden directories, whichever module the
// directory belongs to (hack/registry and a few others are modules of their own).
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, root := range codeRoots {
		err := filepath.WalkDir(filepath.Join(repoRoot, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || (strings.HasPrefix(n, ".") && p != repoRoot) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".go") {
				rel, err := filepath.Rel(repoRoot, filepath.Dir(p))
				if err != nil {
					return err
				}
				seen[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatalf("listing the Go packages under %s: %v", root, err)
		}
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

// layoutMentions returns the paths docs/layout.md names: exact ones, and the roots of the ones
// that end in "/..." (which cover every directory below them).
func layoutMentions(t *testing.T) (exact map[string]bool, trees []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "layout.md"))
	if err != nil {
		t.Fatalf("reading docs/layout.md: %v", err)
	}
	exact = map[string]bool{}
	for _, m := range layoutPathRE.FindAllStringSubmatch(string(b), -1) {
		p := m[1]
		if root, ok := strings.CutSuffix(p, "/..."); ok {
			trees = append(trees, root)
			exact[root] = true
			continue
		}
		exact[strings.TrimSuffix(p, "/")] = true
	}
	return exact, trees
}

func TestLayoutNamesEveryPackage(t *testing.T) {
	exact, trees := layoutMentions(t)
	for _, dir := range goPackageDirs(t) {
		if exact[dir] {
			continue
		}
		covered := false
		for _, root := range trees {
			if strings.HasPrefix(dir, root+"/") {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("docs/layout.md does not name the Go package directory %s: add a line saying what it holds", dir)
		}
	}
}

func TestLayoutPathsExist(t *testing.T) {
	exact, _ := layoutMentions(t)
	if len(exact) == 0 {
		t.Fatal("docs/layout.md names no path: is the pattern of this test still the page's?")
	}
	for p := range exact {
		if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil {
			t.Errorf("docs/layout.md names %s, which does not exist: %v", p, err)
		}
	}
}

// linkRE matches the target of a Markdown inline link or image, [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// fenceRE matches a fenced code block, whose brackets are code, not links.
var fenceRE = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")

func TestRelativeLinksResolve(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing docs/: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		name, _ := filepath.Rel(repoRoot, f)
		text := fenceRE.ReplaceAllString(string(b), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), filepath.FromSlash(target))); err != nil {
				t.Errorf("%s links to %s, which does not exist", name, m[1])
			}
		}
	}
}
