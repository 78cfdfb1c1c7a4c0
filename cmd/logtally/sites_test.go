package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logtally/logtally"
	"github.com/logtally/logtally/internal/poll"
)

// siteTruth is what a site's live window must show, counted by brute force
// from the lines written.
type siteTruth struct {
	requests, pageviews int64
	// visitors are the clients with a page view (one user agent) on each
	// day, in the machine's zone as the daemon's days are: a visitor is an
	// address within one day, so a client seen before and after midnight
	// is two.
	visitors map[string]bool
	pages    map[string]int64
}

func newSiteTruth() *siteTruth {
	return &siteTruth{visitors: map[string]bool{}, pages: map[string]int64{}}
}

func (s *siteTruth) add(when time.Time, ip, path string) {
	s.requests++
	if !strings.HasSuffix(path, ".css") {
		s.pageviews++
		s.visitors[when.In(time.Local).Format(time.DateOnly)+" "+ip] = true
		s.pages[path]++
	}
}

// sitesLog writes a vhost_combined log of three sites, whose hosts come
// in several spellings, and a file of a fourth site that --site names,
// whose %v says nothing that counts. Some clients visit several sites.
func sitesLog(t *testing.T, dir string) (log, shop string, truth map[string]*siteTruth) {
	t.Helper()
	rng := rand.New(rand.NewPCG(15, 15))
	now := time.Now().UTC().Add(-3 * time.Minute).Truncate(time.Second)
	hosts := map[string][]string{
		"blog.example.org": {"blog.example.org", "Blog.Example.org", "blog.example.org."},
		"www.example.org":  {"www.example.org", "WWW.example.org"},
		"docs.example.org": {"docs.example.org"},
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range hosts {
			if !yield(k) {
				return
			}
		}
	})
	truth = map[string]*siteTruth{}
	all := newSiteTruth()
	truth[logtally.AllSites] = all
	var main, shopLines []string
	for i := range 3000 {
		ip := fmt.Sprintf("198.51.100.%d", rng.IntN(200))
		path := fmt.Sprintf("/p%d", rng.IntN(12))
		if rng.IntN(4) == 0 {
			path = "/style.css"
		}
		at := now.Add(time.Duration(i*50) * time.Millisecond)
		when := at.Format("02/Jan/2006:15:04:05 -0700")
		site := "shop.example.org"
		if k := rng.IntN(4); k < 3 {
			site = names[k]
		}
		if truth[site] == nil {
			truth[site] = newSiteTruth()
		}
		truth[site].add(at, ip, path)
		all.add(at, ip, path)
		vhost := "ignored.example.org"
		if site != "shop.example.org" {
			spellings := hosts[site]
			vhost = spellings[rng.IntN(len(spellings))]
		}
		l := fmt.Sprintf(`%s:%d %s - - [%s] "GET %s HTTP/1.1" 200 512 "-" "%s"`, vhost, 80+363*rng.IntN(2), ip, when, path, browser)
		if site == "shop.example.org" {
			shopLines = append(shopLines, l)
		} else {
			main = append(main, l)
		}
	}
	log, shop = filepath.Join(dir, "other_vhosts_access.log"), filepath.Join(dir, "shop.log")
	appendLines(t, log, main...)
	appendLines(t, shop, shopLines...)
	return log, shop, truth
}

type siteStats struct {
	Visitors, Pageviews, Requests int64
}

type sitePages struct {
	Pages []struct {
		Path      string
		Pageviews int64
	}
}

func getURL(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %s: %v", url, body, err)
		}
	}
	return resp.StatusCode
}

// checkSites compares every site's live window and pages, the all-sites
// view and /api/v1/sites with the truth.
func checkSites(t *testing.T, base string, truth map[string]*siteTruth) {
	t.Helper()
	var listed struct {
		Sites []struct {
			Site                          string
			Visitors, Pageviews, Requests int64
		}
	}
	if code := getURL(t, base+"/api/v1/sites", &listed); code != http.StatusOK {
		t.Fatalf("/api/v1/sites: %d", code)
	}
	var names []string
	for i, s := range listed.Sites {
		names = append(names, s.Site)
		if i > 0 && s.Pageviews > listed.Sites[i-1].Pageviews {
			t.Errorf("/api/v1/sites not by page views: %+v", listed.Sites)
		}
	}
	slices.Sort(names)
	if want := []string{"blog.example.org", "docs.example.org", "shop.example.org", "www.example.org"}; !slices.Equal(names, want) {
		t.Errorf("/api/v1/sites lists %q, want %q", names, want)
	}
	for site, want := range truth {
		url := base + "/api/v1/stats?site=" + site
		pagesURL := base + "/api/v1/pages?limit=100&site=" + site
		if site == logtally.AllSites {
			url, pagesURL = base+"/api/v1/stats", base+"/api/v1/pages?limit=100"
		}
		var got siteStats
		if code := getURL(t, url, &got); code != http.StatusOK {
			t.Fatalf("%s: %d", url, code)
		}
		if w := (siteStats{int64(len(want.visitors)), want.pageviews, want.requests}); got != w {
			t.Errorf("%s: %+v, want %+v", url, got, w)
		}
		var pages sitePages
		getURL(t, pagesURL, &pages)
		gotPages := map[string]int64{}
		for _, p := range pages.Pages {
			gotPages[p.Path] = p.Pageviews
		}
		if fmt.Sprint(gotPages) != fmt.Sprint(want.pages) {
			t.Errorf("%s: %v, want %v", pagesURL, gotPages, want.pages)
		}
	}
	var sum int64
	for site, want := range truth {
		if site != logtally.AllSites {
			sum += int64(len(want.visitors))
		}
	}
	if all := int64(len(truth[logtally.AllSites].visitors)); all >= sum {
		t.Fatalf("the test's clients visit one site each (%d visitors over all, %d summed): it shows nothing", all, sum)
	}
	if code := getURL(t, base+"/api/v1/stats?site=nosuch.example.org", nil); code != http.StatusNotFound {
		t.Errorf("unknown site: %d, want 404", code)
	}
	// A site's history answers 503 (Retry-After: 1) until its first
	// commit, which the window's counts do not wait for.
	code := 0
	poll.Until(t, "the site's first commit", func() bool {
		code = getURL(t, base+"/api/v1/series?site=blog.example.org&step=1m", nil)
		return code != http.StatusServiceUnavailable
	})
	if code != http.StatusOK {
		t.Errorf("series of a site: %d", code)
	}
}

// TestSitesEndToEnd runs the real program as a child on a vhost_combined
// log of three sites and a fourth site's file given with --site: every
// site's window and pages are exact, the all-sites view counts a visitor
// of two sites once, an unknown site is a 404; and all of it again after a
// SIGKILL and a restart.
func TestSitesEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, shop, truth := sitesLog(t, dir)
	args := "--db " + filepath.Join(dir, "db") + " --format vhost_combined --site-field %v" +
		" --site shop.example.org=" + shop + " --window-end log --flush-interval 50ms " + log
	waitAll := func(d *daemon) {
		t.Helper()
		poll.Until(t, "every line counted", func() bool {
			var st siteStats
			resp, err := http.Get(d.base() + "/api/v1/stats")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			json.NewDecoder(resp.Body).Decode(&st)
			return st.Requests == truth[logtally.AllSites].requests
		})
	}

	d := startDaemon(t, args)
	waitAll(d)
	checkSites(t, d.base(), truth)
	// Everything is committed once /api/v1/status says the files are read
	// to their end and a commit came after; a SIGKILL then loses nothing,
	// and one before would lose nothing either: the log is read again.
	d.stop(syscall.SIGKILL)
	d = startDaemon(t, args)
	waitAll(d)
	checkSites(t, d.base(), truth)
}
