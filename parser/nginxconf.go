package parser

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An nginx configuration is rarely one file: Debian's nginx.conf includes
// conf.d/*.conf and sites-enabled/*, where a site's log_format and
// access_log often are, and defines no log_format at all, its access_log
// writing nginx's own combined. So the configuration is read as nginx
// reads it, every include in place, and the format is the one its
// access_log lines use unless --log-format-name names one.

// maxIncludeDepth is how deep includes may nest: deeper is a loop.
const maxIncludeDepth = 16

// readNginxConf returns the words of the nginx configuration at path with
// every include replaced by the words of the files it names, as nginx
// reads them: a relative path is relative to the directory of the
// top-level file (nginx's configuration prefix), a glob is expanded in
// name order and may match nothing, a plain path must exist.
func readNginxConf(path string) ([]string, error) {
	return readIncluded(path, filepath.Dir(path), 0)
}

// readIncluded reads the words of the file at path, included depth deep,
// with its includes in place.
func readIncluded(path, prefix string, depth int) ([]string, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("include %s: nested more than %d deep: %w", path, maxIncludeDepth, ErrBadSpec)
	}
	conf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	words, err := confWords(conf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []string
	for i := 0; i < len(words); i++ {
		if !isDirective(words, i, "include") || i+2 >= len(words) || words[i+2] != ";" {
			out = append(out, words[i])
			continue
		}
		files, err := includedFiles(words[i+1], prefix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, f := range files {
			more, err := readIncluded(f, prefix, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
		i += 2 // the path and its ';'
	}
	return out, nil
}

// includedFiles returns the files an include of pattern names.
func includedFiles(pattern, prefix string) ([]string, error) {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(prefix, pattern)
	}
	if !strings.ContainsAny(pattern, "*?[") {
		return []string{pattern}, nil
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("include %s: %w", pattern, err)
	}
	slices.Sort(files)
	return slices.DeleteFunc(files, func(f string) bool {
		fi, err := os.Stat(f)
		return err != nil || fi.IsDir() // nginx includes files only
	}), nil
}

// isDirective reports whether words[i] is the directive name: at the start
// of a statement, not an argument of another.
func isDirective(words []string, i int, name string) bool {
	return words[i] == name && (i == 0 || words[i-1] == ";" || words[i-1] == "{" || words[i-1] == "}")
}

// accessLogFormats returns the log_format names that the access_log lines
// of a configuration's words use, each once, in order: "combined" for one
// that names none, as nginx writes, and none for "access_log off".
func accessLogFormats(words []string) []string {
	var names []string
	for i := 0; i+1 < len(words); i++ {
		if !isDirective(words, i, "access_log") || words[i+1] == "off" {
			continue
		}
		name := "combined"
		if i+2 < len(words) && words[i+2] != ";" && !strings.Contains(words[i+2], "=") {
			name = words[i+2]
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// errSeveralFormats means that the access_log lines use several formats,
// and --log-format-name must say which is the log's.
var errSeveralFormats = errors.New("the access_log lines use several log formats")

// chooseLogFormat returns the name of the log_format to read when none is
// asked for: the one every access_log line uses; with no access_log line,
// "main" where formats are defined (the name nginx's own nginx.conf
// gives), else nginx's combined.
func chooseLogFormat(words []string) (string, error) {
	used := accessLogFormats(words)
	switch {
	case len(used) == 1:
		return used[0], nil
	case len(used) > 1:
		return "", fmt.Errorf("%w (%s): choose the one of the log logtally reads with --log-format-name", errSeveralFormats,
			strings.Join(used, ", "))
	}
	for i := range words {
		if isDirective(words, i, "log_format") {
			return "main", nil
		}
	}
	return "combined", nil
}
