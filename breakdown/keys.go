package breakdown

// Keys is one line's key of each breakdown, in a buffer that the caller
// owns and reuses from line to line, so that deriving them allocates
// nothing once the buffer has grown to a line's worth. A key is valid
// until the next Derive into the same Keys.
type Keys struct {
	buf  []byte
	span [numBreakdowns][2]int32 // key b is buf[span[b][0]:span[b][1]]
	has  set
}

// Key returns the line's key of breakdown b, and false if the line has
// none: b is off, or does not apply to the line (a campaign parameter that
// its query lacks, the path of a line that is not a 404).
func (k *Keys) Key(b Breakdown) ([]byte, bool) {
	if b >= numBreakdowns || !k.has.has(b) {
		return nil, false
	}
	return k.buf[k.span[b][0]:k.span[b][1]], true
}

// reset empties k, keeping its buffer.
func (k *Keys) reset() {
	k.buf = k.buf[:0]
	k.has = 0
}

// begin returns where key b starts; end marks the key's end at the end
// of the buffer.
func (k *Keys) begin() int32 { return int32(len(k.buf)) }

func (k *Keys) end(b Breakdown, start int32) {
	k.span[b] = [2]int32{start, int32(len(k.buf))}
	k.has |= 1 << b
}

// add appends key s of breakdown b.
func (k *Keys) add(b Breakdown, s string) {
	start := k.begin()
	k.buf = append(k.buf, s...)
	k.end(b, start)
}

// addBytes appends key s of breakdown b.
func (k *Keys) addBytes(b Breakdown, s []byte) {
	start := k.begin()
	k.buf = append(k.buf, s...)
	k.end(b, start)
}
