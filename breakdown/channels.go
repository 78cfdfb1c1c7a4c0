package breakdown

import "bytes"

// Channels: the keys of the Channel breakdown.
const (
	ChannelDirect = "direct" // no referrer, or the site's own
	ChannelSearch = "search" // a search engine's results
	ChannelSocial = "social" // a social network or link aggregator
	ChannelOther  = "other"  // any other site, or a Referer with no host
)

// The table of channels is small on purpose: it names the search engines
// and social networks that send most of a small site's visitors, and
// everything else is "other", with its host in the Referrer breakdown.
// (Plausible's channels and GoatCounter's groups go further, into email,
// paid and app referrers; those need the campaign parameters too.) A host
// is looked up by its suffixes at label boundaries, longest first, so a
// subdomain belongs to its domain (m.facebook.com, old.reddit.com) and a
// longer entry wins over a shorter one (mail.google.com over google.*).

// domains are hosts whose subdomains share their channel.
var domains = map[string]string{
	// Search engines known by one host, or whose other hosts are not search.
	"search.yahoo.com":   ChannelSearch,
	"search.yahoo.co.jp": ChannelSearch,
	"search.brave.com":   ChannelSearch,
	"ya.ru":              ChannelSearch,
	// Webmail on a search engine's domain is not a search.
	"mail.google.com": ChannelOther,
	"docs.google.com": ChannelOther,
	// Social networks and link aggregators.
	"facebook.com":         ChannelSocial,
	"x.com":                ChannelSocial,
	"twitter.com":          ChannelSocial,
	"t.co":                 ChannelSocial,
	"linkedin.com":         ChannelSocial,
	"lnkd.in":              ChannelSocial,
	"reddit.com":           ChannelSocial,
	"news.ycombinator.com": ChannelSocial,
	"instagram.com":        ChannelSocial,
	"youtube.com":          ChannelSocial,
	"youtu.be":             ChannelSocial,
	"bsky.app":             ChannelSocial,
	"threads.net":          ChannelSocial,
}

// brands are labels that name their channel under any country's or the
// generic top-level domains: google.com, google.co.uk, news.google.de,
// yandex.com.tr, but not google.example.org.
var brands = map[string]string{
	"google":     ChannelSearch,
	"bing":       ChannelSearch,
	"duckduckgo": ChannelSearch,
	"baidu":      ChannelSearch,
	"yandex":     ChannelSearch,
	"ecosia":     ChannelSearch,
	"qwant":      ChannelSearch,
	"startpage":  ChannelSearch,
	"pinterest":  ChannelSocial,
}

// fediverse are first labels that Mastodon's servers are commonly named
// by (mastodon.social, mastodon.online, mstdn.jp): there are thousands of
// servers, and no table of them stays right.
var fediverse = map[string]bool{"mastodon": true, "mstdn": true}

// channel returns the channel of a normalized referring host.
func channel(host []byte) string {
	if dot := bytes.IndexByte(host, '.'); dot > 0 && fediverse[string(host[:dot])] {
		return ChannelSocial
	}
	for len(host) > 0 {
		if c, ok := domains[string(host)]; ok {
			return c
		}
		dot := bytes.IndexByte(host, '.')
		if dot < 0 {
			break
		}
		if c, ok := brands[string(host[:dot])]; ok && topLevel(host[dot+1:]) {
			return c
		}
		host = host[dot+1:]
	}
	return ChannelOther
}

// topLevel reports whether s looks like a top-level domain, generic or a
// country's, with at most one label before it: "com", "de", "co.uk",
// "com.au". It knows no list of them: it takes one or two labels of two or
// three letters.
func topLevel(s []byte) bool {
	labels := 0
	for len(s) > 0 {
		dot := bytes.IndexByte(s, '.')
		label := s
		if dot >= 0 {
			label, s = s[:dot], s[dot+1:]
		} else {
			s = nil
		}
		if labels++; labels > 2 || len(label) < 2 || len(label) > 3 {
			return false
		}
		for _, c := range label {
			if c < 'a' || c > 'z' {
				return false
			}
		}
	}
	return labels > 0
}
