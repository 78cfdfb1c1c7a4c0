package api

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/logtally/logtally"
)

// body is an answer made once, with its entity tag, to be written to
// every client that asks until what it was made from changes.
type body struct {
	data []byte
	etag []string // one quoted entity tag, as a header value
}

// newBody returns v as a JSON body.
func newBody(v any) *body {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // the bodies are plain structs; failing to encode them is a bug
	}
	return bodyOf(append(data, '\n'))
}

// bodyOf returns data as a body, tagged by its hash.
func bodyOf(data []byte) *body {
	h := fnv.New64a()
	h.Write(data)
	return &body{data: data, etag: []string{`"` + strconv.FormatUint(h.Sum64(), 36) + `"`}}
}

// rendered holds the bodies made from one snapshot. A poll between two
// publishes costs a pointer comparison and a write of bytes made once.
type rendered struct {
	snap   *logtally.Snapshot
	asOf   time.Time // when the fleet's View was read; zero for the node's own window
	stats  *body
	pages  sync.Map // limit -> *body
	events sync.Map // limit -> the event with limit pages, []byte
}

// statsOf is the body of /api/v1/stats for a snapshot.
func statsOf(snap *logtally.Snapshot) Stats {
	return Stats{
		From: snap.From, To: snap.To, WindowSeconds: int64(snap.Length / time.Second),
		Visitors: snap.Visitors, Approximate: snap.Approximate, PageViews: snap.PageViews,
		Requests: snap.Requests, Rejected: snap.Rejected,
	}
}

func (c *rendered) pagesBody(limit int) *body {
	if b, ok := c.pages.Load(limit); ok {
		return b.(*body)
	}
	snap := c.snap
	top := snap.Pages[:min(limit, len(snap.Pages))]
	if top == nil {
		top = []logtally.PageCount{} // an empty array, not null
	}
	b := newBody(Pages{From: snap.From, To: snap.To, WindowSeconds: int64(snap.Length / time.Second), Pages: top,
		AsOf: c.asOf})
	c.pages.Store(limit, b)
	return b
}

var contentJSON = []string{"application/json"}

// serveBody writes a JSON body, or 304 when the client has it already.
func (s *Server) serveBody(w http.ResponseWriter, r *http.Request, b *body) {
	h := w.Header()
	h["Content-Type"] = contentJSON
	h["Cache-Control"] = s.cacheControl
	b.serve(w, r)
}

// serve writes b with its entity tag, or 304 when the client has it
// already; the caller has set the other headers.
func (b *body) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Etag"] = b.etag
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, b.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(len(b.data))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b.data)
	}
}

// etagMatch reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatch(values []string, etag string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}
