package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/logtally/logtally/tally"
)

// Check reads every value of every bucket as a query or a commit would
// read it: bbolt knows nothing of what a value means, so a value changed
// on disk inside a page that is otherwise whole passes bbolt's own check,
// and only decoding it tells. The records of minutes, hours and days carry
// a checksum (record.go), so that any change to one is found; the other
// values are checked for their layout (lengths, order, bounds), which
// finds most changes but not a count that changed into another count.

// valueCheck says what is wrong with a value stored under key, or nil.
type valueCheck func(key, value []byte) error

// valueChecks are the checks of the values of each bucket, as bucketUse
// names them; a bucket not listed holds buckets only, or values that
// nothing reads.
var valueChecks = map[string]valueCheck{
	"meta":                  checkMeta,
	"positions":             fixedLength(8),
	"sites/<site>/minutes":  checkRecord(8, true),
	"sites/<site>/hours":    checkRecord(8, false),
	"sites/<site>/days":     checkRecord(4, false),
	"sites/<site>/visitors": checkVisitors,
	"sites/<site>/paths":    keyed(2, checkShard),
	"sites/<site>/daypaths": keyed(6, checkShard),
	"sites/<site>/pathlog":  keyed(logKeySize, func(v []byte) error { return decodeLog(v, func([]byte, int64) {}) }),
	"sites/<site>/counters": checkCounter,
	"sites/<site>/seconds":  keyed(8, func(v []byte) error { var sec second; return sec.decode(v) }),
	"sites/<site>/outbox":   keyed(8, checkOutboxEntry),
}

// checkValue checks a value of the bucket named name (as bucketName gives
// it); nil for a bucket whose values it does not know.
func checkValue(name string, key, value []byte) error {
	if rest, ok := strings.CutPrefix(name, "sites/"); ok {
		if _, sub, nested := strings.Cut(rest, "/"); nested {
			name = "sites/<site>/" + sub
		}
	}
	if check, ok := valueChecks[name]; ok {
		return check(key, value)
	}
	return nil
}

// keyed checks that a key is n bytes long, then the value with check.
func keyed(n int, check func(v []byte) error) valueCheck {
	return func(k, v []byte) error {
		if len(k) != n {
			return fmt.Errorf("a key of %d bytes, want %d: %w", len(k), n, ErrCorrupt)
		}
		return check(v)
	}
}

// fixedLength checks that a value is n bytes long.
func fixedLength(n int) valueCheck {
	return func(_, v []byte) error {
		if len(v) != n {
			return fmt.Errorf("a value of %d bytes, want %d: %w", len(v), n, ErrCorrupt)
		}
		return nil
	}
}

// checkRecord checks a minute (if minute), an hour or a day, whose key is n
// bytes: the whole record, sketch or visitor set included, as decode reads
// it; only a minute holds a set.
func checkRecord(n int, minute bool) valueCheck {
	return keyed(n, func(v []byte) error {
		var r record
		if err := r.decode(v, true); err != nil {
			return err
		}
		if r.set != nil && !minute {
			return errRollupSet
		}
		return nil
	})
}

// checkVisitors checks a minute's visitor set as a file of schema 5 kept it
// apart (see moveSets).
func checkVisitors(k, v []byte) error {
	if len(k) != 8 {
		return fmt.Errorf("a key of %d bytes, want 8: %w", len(k), ErrCorrupt)
	}
	return checkHashes(v)
}

// checkShard checks a path shard: a path list sorted by path, each path
// once, as mergeShard writes it.
func checkShard(v []byte) error {
	entries, err := decodeShard(v)
	if err != nil {
		return err
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].Path <= entries[i-1].Path {
			return fmt.Errorf("path shard out of order at %d of %d: %w", i, len(entries), ErrCorrupt)
		}
	}
	return nil
}

// checkCounter checks a site's bookkeeping value by its key.
func checkCounter(k, v []byte) error {
	switch {
	case bytes.Equal(k, keyFolded), bytes.Equal(k, keyLazyFrom):
		return fixedLength(4)(k, v)
	case bytes.Equal(k, keyNewest):
		return fixedLength(8)(k, v)
	case bytes.Equal(k, keyKeptFrom):
		return fixedLength(24)(k, v)
	case bytes.HasPrefix(k, []byte("paths/")):
		if n, size := binary.Uvarint(v); size <= 0 || size != len(v) || n > 1<<40 {
			return fmt.Errorf("distinct paths: %w", ErrCorrupt)
		}
	}
	return nil
}

// checkMeta checks a value of the meta bucket by its key.
func checkMeta(k, v []byte) error {
	switch {
	case bytes.Equal(k, keySchema):
		if len(v) != 8 || uint64Key(v) < 1 || uint64Key(v) > SchemaVersion {
			return fmt.Errorf("schema version %x: %w", v, ErrCorrupt)
		}
	case bytes.Equal(k, keyRetention):
		_, err := decodeRetention(v)
		return err
	case bytes.Equal(k, keyFleetNode):
		return fixedLength(16)(k, v)
	case bytes.Equal(k, keyFleetAcked):
		return fixedLength(24)(k, v)
	case bytes.Equal(k, keyZone):
		_, err := decodeZone(v)
		return err
	}
	return nil
}

// checkOutboxEntry checks an outbox entry: its commit time and the batch,
// decoded as the fleet would.
func checkOutboxEntry(v []byte) error {
	if len(v) < 8 {
		return fmt.Errorf("outbox entry of %d bytes: %w", len(v), ErrCorrupt)
	}
	var b tally.Batch
	if err := b.UnmarshalBinary(v[8:]); err != nil {
		return fmt.Errorf("outbox entry: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// keyName says which value a key names, for a problem: the minute, hour or
// day of a record, and always the key's bytes.
func keyName(bucket string, k []byte) string {
	switch {
	case strings.HasSuffix(bucket, "/minutes") && len(k) == 8, strings.HasSuffix(bucket, "/visitors") && len(k) == 8:
		return fmt.Sprintf("minute %s (key %x)", minuteTime(k).Format(time.RFC3339), k)
	case strings.HasSuffix(bucket, "/hours") && len(k) == 8:
		return fmt.Sprintf("hour %s (key %x)", hourTime(k).Format(time.RFC3339), k)
	case strings.HasSuffix(bucket, "/days") && len(k) == 4:
		return fmt.Sprintf("day %d (key %x)", uint32Key(k), k)
	}
	return fmt.Sprintf("key %x", k)
}
