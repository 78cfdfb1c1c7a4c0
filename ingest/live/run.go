package live

import (
	"context"
	"time"

	"github.com/logtally/logtally/tailer"
)

// Run consumes chunks until in is closed or ctx is done, then commits what
// is left. While a commit fails, Run stops taking chunks (the log keeps the
// lines) and retries every flush interval.
func (l *Loop) Run(ctx context.Context, in <-chan tailer.Chunk) error {
	flush := time.NewTicker(l.cfg.Ingest.FlushInterval)
	defer flush.Stop()
	publish := time.NewTicker(l.cfg.PublishInterval)
	defer publish.Stop()
	// On the clock, counts also change when a second leaves the window:
	// publish on each second boundary too, so the slide shows at once.
	second := time.NewTimer(untilNextSecond(l.now()))
	defer second.Stop()
	if l.cfg.Anchor != AnchorClock {
		second.Stop()
	}
	src := in
	for {
		select {
		case <-ctx.Done():
			return l.finish()
		case c, ok := <-src:
			if !ok {
				return l.finish()
			}
			l.chunk(c)
			if _, bad := l.Judge(false, true); bad != nil {
				l.log.Warn("most lines are rejected", "hint", bad.Error())
			}
			if lines, _ := l.PendingLines(); lines >= l.cfg.Ingest.FlushLines && l.commit() != nil {
				src = nil // pause reading until a commit succeeds
			}
		case <-flush.C:
			if l.commit() == nil {
				src = in
			}
		case <-publish.C:
			l.publish()
		case <-second.C:
			l.publish()
			second.Reset(untilNextSecond(l.now()))
		}
	}
}

// untilNextSecond is the time from now to the next whole second.
func untilNextSecond(now time.Time) time.Duration {
	return now.Truncate(time.Second).Add(time.Second).Sub(now)
}

// finish commits what is left and publishes every window, the counters'
// too.
func (l *Loop) finish() error {
	err := l.commit()
	l.publishes = 0
	l.publish()
	return err
}

// chunk counts the lines of c: parsed, routed, in the windows, in the
// batches.
func (l *Loop) chunk(c tailer.Chunk) {
	l.Parse(c, &l.sc, &l.res)
	l.Route(&l.res)
	l.apply(&l.res)
}

// publish publishes every site's window, moved to the clock first. A
// counter's snapshot carries every key, up to --max-counter-keys: sorting
// them is worth doing once a second, not ten times.
func (l *Loop) publish() {
	l.wins.publish(l.now(), l.publishes%10 == 0)
	l.publishes++
}
