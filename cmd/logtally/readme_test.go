package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/logtally/logtally/classify"
	"github.com/logtally/logtally/parser"
)

// The documentation is README.md, ARCHITECTURE.md, deploy/*.md and
// docs/*.md. Their examples of what a
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

// docs returns README.md, ARCHITECTURE.md, deploy/*.md and docs/*.md, in
// that order.
func docs(t *testing.T) []doc {
	t.Helper()
	names := []string{filepath.Join(root, "README.md"), filepath.Join(root, "ARCHITECTURE.md")}
	for _, dir := range []string{"deploy", "docs"} {
		more, err := filepath.Glob(filepath.Join(root, dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(more)
		names = append(names, more...)
	}
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

// TestDocsExamples: every example of the documentation that shows
// what a command prints (a block with "$ " lines) is marked with the
// script that runs it, and is, byte for byte, the transcript that script
// checks against the real program (TestScripts). An example whose output
// changes fails TestScripts until the script's transcript, and then the
// document, are updated.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestREADMESaysCurlIsACrawler: a first test of one's own site with curl
// shows no page view, since curl's user agent is a crawler's: the README
// says so by its first curl, and it stays true of the default rules.
func TestREADMESaysCurlIsACrawler(t *testing.T) {
	t.Parallel()
	readme := docs(t)[0]
	var first docBlock
	for _, b := range readme.blocks() {
		if strings.Contains(b.text, "$ curl") {
			first = b
			break
		}
	}
	// The paragraph after the block: from the line after its closing fence
	// to the next blank line.
	var para []string
	i := first.line + strings.Count(first.text, "\n") + 1
	for i++; i < len(readme.lines) && strings.TrimSpace(readme.lines[i]) != ""; i++ {
		para = append(para, readme.lines[i])
	}
	text := strings.Join(para, " ")
	for _, want := range []string{"curl", "not as a page view", "crawler", "-A 'Mozilla/5.0'"} {
		if !strings.Contains(text, want) {
			t.Errorf("%s: the paragraph after the first curl lacks %q: %q", first.where(), want, text)
		}
	}
	format, err := parser.New("combined")
	if err != nil {
		t.Fatal(err)
	}
	classifier, err := classify.New(classify.DefaultConfig(), testKey)
	if err != nil {
		t.Fatal(err)
	}
	for ua, want := range map[string]bool{"curl/8.5.0": false, "Mozilla/5.0": true} {
		var rec parser.Record
		line := `192.0.2.1 - - [21/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "` + ua + `"`
		if err := format.Parse([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if got := classifier.Classify(&rec).PageView; got != want {
			t.Errorf("GET / by %q: page view %v, want %v", ua, got, want)
		}
	}
}

// TestREADMEIsShort: the README is the front door, not the manual, which
// is docs/.
func TestREADMEIsShort(t *testing.T) {
	t.Parallel()
	if n := len(docs(t)[0].lines) - 1; n > 250 {
		t.Errorf("README.md has %d lines, more than 250: move the detail to docs/", n)
	}
}

// link is a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every link of the documentation to a file of the
// repository names one that exists, and a link to a section (#anchor) names
// a heading of its document, as GitHub makes anchors of headings.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	all := docs(t)
	anchors := map[string]map[string]bool{}
	for _, d := range all {
		anchors[d.name] = headingAnchors(d.lines)
	}
	for _, d := range all {
		inFence := false
		for i, line := range d.lines {
			if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				if msg := checkLink(d.name, target, anchors); msg != "" {
					t.Errorf("%s:%d: link %s: %s", d.name, i+1, target, msg)
				}
			}
		}
	}
}

// checkLink says what is wrong with a link from the document from to
// target, or "" if nothing is.
func checkLink(from, target string, anchors map[string]map[string]bool) string {
	path, anchor, _ := strings.Cut(target, "#")
	name := from
	if path != "" {
		name = filepath.ToSlash(filepath.Join(filepath.Dir(from), path))
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	heads, ok := anchors[name]
	if !ok {
		return "" // an anchor into a file that is not a document of ours
	}
	if !heads[anchor] {
		return "no heading makes the anchor #" + anchor + " in " + name
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of a
// document: lower case, punctuation dropped, spaces as hyphens, and -1, -2
// after repeats.
func headingAnchors(lines []string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
