package ingest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/logtally/logtally"
)

// DefaultMaxSites is how many sites are counted apart by default.
const DefaultMaxSites = 1000

// SiteFile maps the lines of the files a path or glob names to a site:
// --site NAME=PATH.
type SiteFile struct {
	Site string // a site name, as logtally.NormalizeSite gives it
	Path string // a path or a glob
}

// siteFiles is the repeatable --site flag.
type siteFiles []SiteFile

func (s *siteFiles) String() string {
	parts := make([]string, len(*s))
	for i, f := range *s {
		parts[i] = f.Site + "=" + f.Path
	}
	return strings.Join(parts, ",")
}

func (s *siteFiles) Set(v string) error {
	f, err := ParseSiteFile(v)
	if err != nil {
		return err
	}
	*s = append(*s, f)
	return nil
}

// ErrBadSite means a --site value names no site or no file.
var ErrBadSite = errors.New("bad site mapping")

// ParseSiteFile parses NAME=PATH. NAME is taken as a host name is from a
// line (lower case, no port, no trailing dot), and must be one.
func ParseSiteFile(v string) (SiteFile, error) {
	name, path, ok := strings.Cut(v, "=")
	if !ok || path == "" {
		return SiteFile{}, fmt.Errorf("%w: want NAME=PATH, such as blog.example.org=/var/log/nginx/blog.access.log", ErrBadSite)
	}
	site := string(logtally.NormalizeSite(nil, []byte(name)))
	if site == logtally.DefaultSite && !strings.EqualFold(strings.TrimSpace(name), logtally.DefaultSite) {
		return SiteFile{}, fmt.Errorf("%w: %q is not a host name (letters, digits, '.', '-', '_')", ErrBadSite, name)
	}
	return SiteFile{Site: site, Path: path}, nil
}
