package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// readmeBlock is a fenced block of the README, with the script marker
// above it, if any.
type readmeBlock struct {
	line          int    // of the opening fence
	script, file  string // from <!-- script: NAME FILE -->
	text          string // between the fences
	info          string // after the opening fence: sh, json, ...
	beforeFirstH2 bool
}

var marker = regexp.MustCompile(`^<!-- script: (\S+) (\S+) -->$`)

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks []readmeBlock
	h2 := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "## ") {
			h2 = true
		}
		trimmed := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := line[:len(line)-len(trimmed)]
		b := readmeBlock{line: i + 1, info: strings.TrimPrefix(trimmed, "```"), beforeFirstH2: !h2}
		if i > 0 {
			if m := marker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.script, b.file = m[1], m[2]
			}
		}
		var text strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			text.WriteString(strings.TrimPrefix(lines[i], indent) + "\n")
		}
		b.text = text.String()
		blocks = append(blocks, b)
	}
	return blocks
}

// TestREADME: every example in the README that shows what a command prints
// (a block with "$ " lines) is marked with the script that runs it, and is,
// byte for byte, the transcript that script checks against the real
// program (TestScripts). An example whose output changes fails TestScripts
// until the script's transcript, and then the README, are updated.
func TestREADME(t *testing.T) {
	blocks := readmeBlocks(t)
	marked := 0
	for _, b := range blocks {
		isExample := regexp.MustCompile(`(?m)^\$ `).MatchString(b.text)
		if b.script == "" {
			if isExample {
				t.Errorf("README.md:%d: an example with no <!-- script: NAME FILE --> above it:\n%s", b.line, b.text)
			}
			continue
		}
		marked++
		path := filepath.Join("testdata", "script", b.script+".txtar")
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Errorf("README.md:%d: %v", b.line, err)
			continue
		}
		if !regexp.MustCompile(`(?m)^transcript ` + regexp.QuoteMeta(b.file) + `$`).Match(ar.Comment) {
			t.Errorf("README.md:%d: %s does not run 'transcript %s'", b.line, path, b.file)
		}
		found := false
		for _, f := range ar.Files {
			if f.Name != b.file {
				continue
			}
			found = true
			if string(f.Data) != b.text {
				t.Errorf("README.md:%d differs from %s in %s:\nREADME:\n%s\nscript:\n%s", b.line, b.file, path, b.text, f.Data)
			}
		}
		if !found {
			t.Errorf("README.md:%d: %s has no file %s", b.line, path, b.file)
		}
	}
	if marked < 10 {
		t.Errorf("only %d README blocks are backed by scripts", marked)
	}
}

// TestREADMEFirstScreen: the README opens with exactly two commands, the
// try-it and the tests, and says how long the first build takes.
func TestREADMEFirstScreen(t *testing.T) {
	var first []readmeBlock
	for _, b := range readmeBlocks(t) {
		if b.beforeFirstH2 {
			first = append(first, b)
		}
	}
	want := "go run ./cmd/logtally run --window-end log testdata/sample.log\ngo test -race ./...\n"
	if len(first) != 1 || first[0].text != want {
		t.Errorf("the README's first screen has %d blocks, %+v; want one, with exactly:\n%s", len(first), first, want)
	}
	data, _ := os.ReadFile(filepath.Join("..", "..", "README.md"))
	intro := string(data)[:strings.Index(string(data), "```")]
	if !regexp.MustCompile(`cold .go build ./cmd/logtally. took \d+ s`).MatchString(intro) {
		t.Errorf("the README's first lines do not give the cold build time")
	}
}
