package classify

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/logtally/logtally/crawler"
)

// Crawler lists accepted by Config.BotList.
const (
	ListCrawlerDetect = "crawler-detect" // Crawler-Detect's, built in: see package crawler
	ListNone          = "none"           // none: only Config.BotTokens
)

// agentRules tells a crawler's user agent from a person's: the operator's
// exceptions first (PersonTokens), then the operator's own crawler tokens,
// then the list.
type agentRules struct {
	list    *crawler.List // nil for none
	bots    [][]byte      // Config.BotTokens in lower case
	persons [][]byte      // Config.PersonTokens in lower case
}

func newAgentRules(cfg *Config) agentRules {
	a := agentRules{bots: lowerTokens(cfg.BotTokens), persons: lowerTokens(cfg.PersonTokens)}
	if cfg.BotList == ListCrawlerDetect {
		a.list = crawler.Default()
	}
	return a
}

func validBotList(name string) error {
	if name != ListCrawlerDetect && name != ListNone {
		return fmt.Errorf("--bot-list %q: want %s or %s", name, ListCrawlerDetect, ListNone)
	}
	return nil
}

func lowerTokens(tokens []string) [][]byte {
	var out [][]byte
	for _, t := range tokens {
		if t = strings.ToLower(t); t != "" {
			out = append(out, []byte(t))
		}
	}
	return out
}

// bot reports whether ua is empty, "-", or a crawler's.
func (a *agentRules) bot(ua []byte) bool {
	if len(ua) == 0 || string(ua) == "-" {
		return true
	}
	if containsAny(ua, a.persons) {
		return false
	}
	return containsAny(ua, a.bots) || a.list != nil && a.list.Match(ua)
}

// containsAny reports whether ua contains one of the lower-case tokens,
// in any case.
func containsAny(ua []byte, tokens [][]byte) bool {
	if len(tokens) == 0 {
		return false
	}
	// Lower-case the agent once, on the stack, so that each token is a
	// plain bytes.Index, which is vectorised: four times faster than
	// folding case token by token. Agents longer than the buffer, which
	// browsers do not send, take the slow path.
	var buf [512]byte
	if len(ua) > len(buf) {
		for _, tok := range tokens {
			if containsFold(ua, tok) {
				return true
			}
		}
		return false
	}
	low := buf[:len(ua)]
	for i, c := range ua {
		low[i] = lower(c)
	}
	for _, tok := range tokens {
		if bytes.Contains(low, tok) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII token,
// ignoring ASCII case in s.
func containsFold(s, token []byte) bool {
	n := len(token)
	for i := 0; i+n <= len(s); i++ {
		if lower(s[i]) != token[0] {
			continue
		}
		j := 1
		for j < n && lower(s[i+j]) == token[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

// Memo remembers the crawler verdicts of the user agents seen lately, for
// one goroutine: a log holds few distinct agents, and telling one costs
// more than parsing its line. Its zero value is ready to use; a nil *Memo
// remembers nothing.
//
// It holds two generations of at most memoSize agents: when the newer is
// full it becomes the older, and the older is dropped; an agent found in
// the older is copied into the newer. So a flood of distinct agents costs
// one telling each and bounded memory, and the agents of the log's people
// and crawlers, seen again and again, stay remembered through it.
//
// In front of them a few agents are kept in place, each in the slot a
// glance at its length and two of its words picks (recentAgents): the
// handful of agents that make most of a log then cost a compare, not a
// hash of a hundred bytes and a map lookup.
type Memo struct {
	bots, older map[string]bool
	recent      *recentAgents
}

// recentAgents is a Memo's agents kept in place, by slot.
type recentAgents [recentSlots]struct {
	n   int // length of the agent in b; 0: none
	bot bool
	b   [memoAgentMax]byte
}

// recentSlots is how many agents a Memo keeps in place: 32 KiB.
const recentSlots = 64

// recentSlot picks ua's slot from its length and its 8 bytes at the middle
// and at the end, where agents differ: a browser's version, a crawler's
// name.
func recentSlot(ua []byte) int {
	x := uint64(len(ua))
	if len(ua) >= 8 {
		mid := len(ua) / 2
		if mid+8 > len(ua) {
			mid = len(ua) - 8
		}
		x ^= binary.LittleEndian.Uint64(ua[mid:]) ^ binary.LittleEndian.Uint64(ua[len(ua)-8:])*0x9e3779b97f4a7c15
	}
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	return int(x>>32) % recentSlots
}

// memoSize is the most agents a generation of a Memo holds, and
// memoAgentMax the longest agent it remembers: browsers send a few hundred
// bytes, and a flood of agents of 64 KiB, each remembered, would hold half a
// gigabyte. So a Memo holds at most 4 MiB of agents.
const (
	memoSize     = 4096
	memoAgentMax = 512
)

// botMemo is bot, remembered in memo.
func (r *Classifier) botMemo(ua []byte, memo *Memo) bool {
	if memo == nil || len(ua) > memoAgentMax || len(ua) == 0 {
		return r.agents.bot(ua)
	}
	if memo.recent == nil {
		memo.recent = new(recentAgents)
	}
	slot := &memo.recent[recentSlot(ua)]
	if slot.n == len(ua) && string(slot.b[:slot.n]) == string(ua) {
		return slot.bot
	}
	v := r.botRemembered(ua, memo)
	slot.n, slot.bot = copy(slot.b[:], ua), v
	return v
}

// botRemembered is bot, remembered in memo's generations.
func (r *Classifier) botRemembered(ua []byte, memo *Memo) bool {
	if v, ok := memo.bots[string(ua)]; ok {
		return v
	}
	v, ok := memo.older[string(ua)]
	if !ok {
		v = r.agents.bot(ua)
	}
	if len(memo.bots) >= memoSize || memo.bots == nil {
		memo.older, memo.bots = memo.bots, make(map[string]bool, 64)
	}
	memo.bots[string(ua)] = v
	return v
}
