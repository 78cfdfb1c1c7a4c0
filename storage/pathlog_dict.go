package storage

import (
	"cmp"
	"slices"

	"github.com/logtally/logtally"
)

// otherID is the batch path number that stands for logtally.OtherPath.
const otherID = -1

// dict numbers the paths of the log, so that a day's counts are an array.
// It is the log's one dictionary, kept across compactions (up to
// compactSoftPaths paths) so that a busy site's paths are not numbered
// again after each.
type dict struct {
	slot  map[string]int32
	names []string
	shard []uint8 // shardOf(names[i])
	// order lists numbers by shard, then path: compaction merges a day's
	// paths shard by shard in that order, and sorting a busy day's paths
	// again for every compaction would cost more than the merge. Numbers
	// from len(order) on are not in it yet (sortOrder). Only the writer
	// uses it.
	order []int32
}

// lookup returns a path's number, or -1.
func (d *dict) lookup(path string) int32 {
	if i, ok := d.slot[path]; ok {
		return i
	}
	return -1
}

// insert numbers a new path.
func (d *dict) insert(path string) int32 {
	i := int32(len(d.names))
	d.slot[path] = i
	d.names = append(d.names, path)
	d.shard = append(d.shard, uint8(shardOf(path)))
	return i
}

func (d *dict) len() int { return len(d.names) }

// clear forgets every path.
func (d *dict) clear() {
	clear(d.slot)
	clear(d.names) // let the strings go
	d.names, d.shard, d.order = d.names[:0], d.shard[:0], d.order[:0]
}

// sortOrder brings the paths numbered since the last call into order.
func (d *dict) sortOrder() {
	if len(d.order) == len(d.names) {
		return
	}
	byShardPath := func(a, b int32) int {
		if c := cmp.Compare(d.shard[a], d.shard[b]); c != 0 {
			return c
		}
		return cmp.Compare(d.names[a], d.names[b])
	}
	fresh := make([]int32, 0, len(d.names)-len(d.order))
	for i := len(d.order); i < len(d.names); i++ {
		fresh = append(fresh, int32(i))
	}
	slices.SortFunc(fresh, byShardPath)
	merged := make([]int32, 0, len(d.names))
	i, j := 0, 0
	for i < len(d.order) && j < len(fresh) {
		if byShardPath(d.order[i], fresh[j]) < 0 {
			merged = append(merged, d.order[i])
			i++
		} else {
			merged = append(merged, fresh[j])
			j++
		}
	}
	merged = append(merged, d.order[i:]...)
	d.order = append(merged, fresh[j:]...)
}

// numbering gives the paths of the batch being committed their numbers in
// the log's dictionary; the paths the dictionary lacks are given the
// numbers after its own, which they take when the change is published. It
// is the writer's scratch, kept from one commit to the next.
//
// Looking every distinct path of a commit up in the dictionary would cost
// more than the rest of the commit's path work: a busy site's commit brings
// tens of thousands, each a few cache misses. So numbering remembers, by
// batch path number, the dictionary number the path had (hint), and
// trusts it only if the dictionary still names the same path there: a
// batch keeps its numbers across commits, and the dictionary holds the
// batch's own strings, so the check is mostly a pointer comparison. A
// stale hint (another batch, a batch that renumbered, a dictionary emptied
// by compaction) fails the check and the path is looked up.
type numbering struct {
	dict  *dict
	names []string // the batch's paths
	// hint holds, by batch path number, a dictionary number plus 1; or -1
	// if the path is not in the dictionary, found by this commit (absent
	// lists those); or 0.
	hint   []int32
	absent []int32
	fresh  []string // paths numbered past the dictionary, in order
	// other is the number plus 2 of logtally.OtherPath in this commit, 1
	// if the dictionary lacks it, 0 if not looked up yet.
	other int32
}

// start readies nb for a batch's paths.
func (nb *numbering) start(d *dict, names []string) {
	nb.dict, nb.names, nb.other, nb.fresh = d, names, 0, nb.fresh[:0]
	if len(nb.hint) < len(names) {
		nb.hint = append(nb.hint, make([]int32, len(names)+len(names)/4-len(nb.hint))...)
	}
}

// name returns batch path id's path.
func (nb *numbering) name(id int32) string {
	if id == otherID {
		return logtally.OtherPath
	}
	return nb.names[id]
}

// lookup returns the dictionary number of batch path id, or -1.
func (nb *numbering) lookup(id int32) int32 {
	name := nb.name(id)
	if name == logtally.OtherPath { // a path may be named so: one number for both
		if nb.other == 0 {
			nb.other = nb.dict.lookup(name) + 2
		}
		return nb.other - 2
	}
	switch h := nb.hint[id]; {
	case h < 0:
		return -1
	case h > 0 && nb.named(h-1, name):
		return h - 1
	}
	sl := nb.dict.lookup(name)
	nb.hint[id] = sl + 1
	if sl < 0 {
		nb.hint[id] = -1
		nb.absent = append(nb.absent, id)
	}
	return sl
}

// named reports whether number sl is name's, in the dictionary or among
// the paths numbered past it.
func (nb *numbering) named(sl int32, name string) bool {
	if n := nb.dict.len(); int(sl) >= n {
		return int(sl)-n < len(nb.fresh) && nb.fresh[int(sl)-n] == name
	}
	return nb.dict.names[sl] == name
}

// number returns the dictionary number of batch path id, numbering it past
// the dictionary if the dictionary lacks it.
func (nb *numbering) number(id int32) int32 {
	if sl := nb.lookup(id); sl >= 0 {
		return sl
	}
	sl := int32(nb.dict.len() + len(nb.fresh))
	nb.fresh = append(nb.fresh, nb.name(id))
	if nb.name(id) == logtally.OtherPath {
		nb.other = sl + 2
	} else {
		nb.hint[id] = sl + 1
	}
	return sl
}

// reset lets the batch go after its commit. The hints stay, but for what
// the commit found absent: the dictionary may hold it now.
func (nb *numbering) reset() {
	for _, id := range nb.absent {
		if nb.hint[id] < 0 {
			nb.hint[id] = 0
		}
	}
	nb.dict, nb.names, nb.absent = nil, nil, nb.absent[:0]
}
