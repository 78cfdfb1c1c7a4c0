package classify

import (
	"bytes"
	"fmt"
	"strings"
)

// DefaultFeedPaths are the rules that tell a feed (RSS, Atom) by its URL,
// whoever fetches it: a feed reader that the crawler list does not know
// still fetches /feed/, and a person does not read a feed as a page. They
// are those of WordPress (/feed/, /comments/feed/, ?feed=rss2), Blogger
// (/feeds/...), Ghost (/rss/), Hugo and Jekyll (index.xml, feed.xml,
// atom.xml) and Blosxom (?flav=rss20, index.rss).
var DefaultFeedPaths = strings.Fields("feed feeds rss atom .rss .atom .rdf .xml ?feed ?flav=rss* ?flav=atom* ?format=rss* ?format=atom*")

// feedRules are Config.FeedPaths, compiled. A rule is one of:
//
//	NAME          a segment of the path is NAME (/feed/, /blog/feed, /feeds/posts/default)
//	.EXT          the last segment of the path ends in .EXT (/index.rss)
//	?KEY          the query has the parameter KEY, with any value (?feed=rss2)
//	?KEY=VALUE    ... with the value VALUE
//	?KEY=PREFIX*  ... with a value that starts with PREFIX (?flav=rss20)
//
// all without regard to ASCII case.
type feedRules struct {
	names    [][]byte  // lower case
	nameLens uint64    // bit n set: a name is n bytes long
	first    [256]bool // the first bytes of the names, in both cases
	exts     [][]byte  // lower case, without the dot
	params   []feedParam
}

// feedParam is a ?KEY, ?KEY=VALUE or ?KEY=PREFIX* rule.
type feedParam struct {
	key, value [][]byte // one word each, in lower case
	anyValue   bool     // ?KEY
	prefix     bool     // ?KEY=PREFIX*
}

// compileFeedRules compiles the rules of --feed-paths.
func compileFeedRules(rules []string) (feedRules, error) {
	var f feedRules
	for _, rule := range rules {
		low := []byte(strings.ToLower(rule))
		switch {
		case len(low) > 1 && low[0] == '?':
			k, v, hasValue := bytes.Cut(low[1:], []byte{'='})
			v, prefix := bytes.CutSuffix(v, []byte{'*'})
			if len(k) == 0 || bytes.ContainsAny(k, "&=*") || bytes.ContainsAny(v, "&=*") {
				return f, fmt.Errorf("--feed-paths %q: want ?KEY, ?KEY=VALUE or ?KEY=PREFIX*", rule)
			}
			f.params = append(f.params, feedParam{key: [][]byte{k}, value: [][]byte{v}, anyValue: !hasValue, prefix: prefix})
		case len(low) > 1 && low[0] == '.' && !bytes.ContainsAny(low[1:], "./?"):
			f.exts = append(f.exts, low[1:])
		case len(low) > 0 && len(low) < 64 && low[0] != '.' && !bytes.ContainsAny(low, "/?&=*"):
			f.names = append(f.names, low)
			f.nameLens |= 1 << len(low)
			f.first[low[0]] = true
			f.first[upper(low[0])] = true
		default:
			return f, fmt.Errorf("--feed-paths %q: want a path segment (feed, shorter than 64 bytes), an extension (.rss) or a query parameter (?feed, ?flav=rss*)", rule)
		}
	}
	return f, nil
}

// feed reports whether path or query names a feed. It does not allocate,
// and runs for every line: one pass over the path, in which a segment is
// compared only if its length and first byte are a name's.
func (f *feedRules) feed(path, query []byte) bool {
	start, last := 0, path[:0] // last: the last segment that is not empty
	for i, c := range path {
		if c != '/' {
			continue
		}
		if i > start {
			if last = path[start:i]; f.name(last) {
				return true
			}
		}
		start = i + 1
	}
	if start < len(path) {
		if last = path[start:]; f.name(last) {
			return true
		}
	}
	if dot := bytes.LastIndexByte(last, '.'); dot >= 0 && anyFold(last[dot+1:], f.exts) {
		return true
	}
	if len(f.params) == 0 {
		return false
	}
	for rest := query; len(rest) > 0; {
		var param []byte
		param, rest, _ = bytes.Cut(rest, []byte{'&'})
		key, value, _ := bytes.Cut(param, []byte{'='})
		for _, p := range f.params {
			if !anyFold(key, p.key) {
				continue
			}
			if p.anyValue || anyFold(value, p.value) ||
				p.prefix && len(value) >= len(p.value[0]) && anyFold(value[:len(p.value[0])], p.value) {
				return true
			}
		}
	}
	return false
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// name reports whether seg is one of the names.
func (f *feedRules) name(seg []byte) bool {
	n := len(seg)
	return n > 0 && n < 64 && f.nameLens&(1<<n) != 0 && f.first[seg[0]] && anyFold(seg, f.names)
}

// anyFold reports whether s is one of the lower-case words, in ASCII
// case. It runs for every segment of every path: comparing lengths first,
// and folding by hand, it costs a few nanoseconds where bytes.EqualFold,
// which folds Unicode, costs ten times as much.
func anyFold(s []byte, words [][]byte) bool {
	for _, w := range words {
		if len(w) != len(s) {
			continue
		}
		i := 0
		for i < len(s) && lower(s[i]) == w[i] {
			i++
		}
		if i == len(s) {
			return true
		}
	}
	return false
}
