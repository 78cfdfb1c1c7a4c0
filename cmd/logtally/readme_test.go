package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// The documentation is README.md and docs/*.md. Their examples of what a
// command prints are tests: each is the transcript a script of
// testdata/script runs against the real program (TestScripts), so an
// example cannot drift from what logtally prints.

// root is the repository's root, from this package's directory.
var root = filepath.Join("..", "..")

// doc is one file of the documentation.
type doc struct {
	name  string // relative to the root: README.md, docs/api.md, ...
	lines []string
}

// docs returns README.md and every docs/*.md, in that order.
func docs(t *testing.T) []doc {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	names = append([]string{filepath.Join(root, "README.md")}, names...)
	var out []doc
	for _, path := range names {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, path)
		out = append(out, doc{name: filepath.ToSlash(name), lines: strings.Split(string(data), "\n")})
	}
	return out
}

// docBlock is a fenced block of a document, with the script marker above
// it, if any.
type docBlock struct {
	doc           string // the document's name, as docs gives it
	line          int    // of the opening fence
	script, file  string // from <!-- script: NAME FILE -->
	text          string // between the fences
	beforeFirstH2 bool
}

// where is the block's place, as a reader looks it up: FILE:LINE.
func (b docBlock) where() string { return b.doc + ":" + strconv.Itoa(b.line) }

var marker = regexp.MustCompile(`^<!-- script: (\S+) (\S+) -->$`)

// blocks returns the fenced blocks of d.
func (d doc) blocks() []docBlock {
	var blocks []docBlock
	h2 := false
	for i := 0; i < len(d.lines); i++ {
		line := d.lines[i]
		if strings.HasPrefix(line, "## ") {
			h2 = true
		}
		trimmed := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := line[:len(line)-len(trimmed)]
		b := docBlock{doc: d.name, line: i + 1, beforeFirstH2: !h2}
		if i > 0 {
			if m := marker.FindStringSubmatch(strings.TrimSpace(d.lines[i-1])); m != nil {
				b.script, b.file = m[1], m[2]
			}
		}
		var text strings.Builder
		for i++; i < len(d.lines) && strings.TrimSpace(d.lines[i]) != "```"; i++ {
			text.WriteString(strings.TrimPrefix(d.lines[i], indent) + "\n")
		}
		b.text = text.String()
		blocks = append(blocks, b)
	}
	return blocks
}

var example = regexp.MustCompile(`(?m)^\$ `)

// TestDocsExamples: every example in README.md and docs/*.md that shows
// what a command prints (a block with "$ " lines) is marked with the
// script that runs it, and is, byte for byte, the transcript that script
// checks against the real program (TestScripts). An example whose output
// changes fails TestScripts until the script's transcript, and then the
// document, are updated.
func TestDocsExamples(t *testing.T) {
	marked := 0
	for _, d := range docs(t) {
		for _, b := range d.blocks() {
			if b.script == "" {
				if example.MatchString(b.text) {
					t.Errorf("%s: an example with no <!-- script: NAME FILE --> above it:\n%s", b.where(), b.text)
				}
				continue
			}
			marked++
			checkExample(t, b)
		}
	}
	if marked < 10 {
		t.Errorf("only %d blocks of the docs are backed by scripts", marked)
	}
}

// checkExample checks that b is the file its marker names, in a script
// that runs it as a transcript.
func checkExample(t *testing.T, b docBlock) {
	t.Helper()
	path := filepath.Join("testdata", "script", b.script+".txtar")
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Errorf("%s: %v", b.where(), err)
		return
	}
	if !regexp.MustCompile(`(?m)^transcript ` + regexp.QuoteMeta(b.file) + `$`).Match(ar.Comment) {
		t.Errorf("%s: %s does not run 'transcript %s'", b.where(), path, b.file)
	}
	for _, f := range ar.Files {
		if f.Name == b.file {
			if string(f.Data) != b.text {
				t.Errorf("%s differs from %s in %s:\n%s:\n%s\nscript:\n%s", b.where(), b.file, path, b.doc, b.text, f.Data)
			}
			return
		}
	}
	t.Errorf("%s: %s has no file %s", b.where(), path, b.file)
}

// TestREADMEFirstScreen: the README opens with exactly two commands, the
// try-it and the tests, and says how long the first build takes.
func TestREADMEFirstScreen(t *testing.T) {
	readme := docs(t)[0]
	var first []docBlock
	for _, b := range readme.blocks() {
		if b.beforeFirstH2 {
			first = append(first, b)
		}
	}
	want := "go run ./cmd/logtally run --window-end log testdata/sample.log\ngo test -race ./...\n"
	if len(first) != 1 || first[0].text != want {
		t.Errorf("the README's first screen has %d blocks, %+v; want one, with exactly:\n%s", len(first), first, want)
	}
	text := strings.Join(readme.lines, "\n")
	intro := text[:strings.Index(text, "```")]
	if !regexp.MustCompile(`cold .go build ./cmd/logtally. took \d+ s`).MatchString(intro) {
		t.Errorf("the README's first lines do not give the cold build time")
	}
}

// TestREADMEIsShort: the README is the front door, not the manual, which
// is docs/.
func TestREADMEIsShort(t *testing.T) {
	if n := len(docs(t)[0].lines) - 1; n > 250 {
		t.Errorf("README.md has %d lines, more than 250: move the detail to docs/", n)
	}
}
