package breakdown

// Memo is what one goroutine remembers of the lines it has seen, so that
// a line like those before costs a lookup or a compare: the agents and
// client networks seen lately (at most 4,096 of each, about 2.5 MiB at
// worst: see agentCache, netCache) and the referrer of the line before. Its
// zero value is ready; its tables are made on first use. A Memo serves one
// goroutine at a time, and one Deriver: given to another, it starts
// afresh.
type Memo struct {
	owner  *Deriver
	agents agentCache
	nets   netCache
	ref    refMemo
}

// refMemoMax is the longest Referer that a refMemo remembers: a longer one
// is read again on the next line.
const refMemoMax = 1024

// refMemo remembers the Referer and virtual host of the line before, and
// what they gave: the assets of a page come one after another, each with
// the page as its referrer, so six lines in ten of a small site's log have
// the Referer of the line before, which then costs a compare.
type refMemo struct {
	ok         bool // ref and vhost are the line before's
	ref, vhost []byte
	key        []byte // its Referrer key
	channel    string
}

// same reports whether ref and vhost are those of the line before.
func (m *refMemo) same(ref, vhost []byte) bool {
	return m.ok && string(m.ref) == string(ref) && string(m.vhost) == string(vhost)
}

// set remembers what ref and vhost gave. key may alias m.key.
func (m *refMemo) set(ref, vhost, key []byte, channel string) {
	m.key, m.channel = key, channel
	m.ok = len(ref) <= refMemoMax && len(vhost) <= MaxHost
	if m.ok {
		m.ref = append(m.ref[:0], ref...)
		m.vhost = append(m.vhost[:0], vhost...)
	}
}
