package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/logtally/logtally/tailer"
)

// replayCmd is `logtally replay`: it reads logs to their end, commits what
// they count, prints a summary and returns. It keeps no live window and
// serves nothing.
type replayCmd struct {
	proc *process
	countConfig
	*counting // nil until Run opens it
}

func newReplayCmd(p *process) *replayCmd {
	return &replayCmd{proc: p, countConfig: defaultCountConfig()}
}

func (r *replayCmd) registerFlags(fs *flag.FlagSet) {
	r.countConfig.registerFlags(fs, false)
	// No window, but lines as far ahead of the clock as run turns away are
	// turned away here too.
	fs.DurationVar(&r.Window.MaxSkew, "max-skew", r.Window.MaxSkew,
		"lines further ahead of the clock than this are rejected")
}

// check takes the files to read, and checks them and the flags.
func (r *replayCmd) check(files []string) error {
	r.Files = files
	if err := r.sitePatterns(true); err != nil {
		return err
	}
	if len(r.patterns) == 0 {
		return errors.New("no FILE given: name the logs to read, such as /var/log/nginx/access.log.1")
	}
	r.Pipeline.replay(r.Tailer.MaxLine)
	return r.validate()
}

// Run reads the files to their end, commits, prunes what moved past its
// retention, and prints the summary.
func (r *replayCmd) Run(ctx context.Context) (err error) {
	if err := r.ensureLogger(r.proc); err != nil {
		return err
	}
	if err := tailer.CheckReplayed(r.patterns); err != nil {
		return err
	}
	if r.counting, err = r.open(ctx, r.proc, nil); err != nil {
		return err
	}
	start := time.Now()
	err = r.read(ctx, start)
	if err == nil {
		// What the replay moved past its retention goes now, not at the
		// next run, and the log says what it was.
		err = r.store.PruneLogged(ctx, r.proc.Logger)
	}
	return r.summarize(start, err)
}

// read reads the files into the pipeline until their end, or until the
// pipeline stops early (a failed commit), showing its progress.
func (r *replayCmd) read(ctx context.Context, start time.Time) error {
	reader := &tailer.Reader{MaxLine: r.Tailer.MaxLine}
	chunks := make(chan tailer.Chunk, 8)
	done := make(chan error, 1)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		err := r.pipeline.Replay(ctx, chunks)
		stopReading()
		done <- err
	}()
	stopProgress := progress(r.proc.Stderr, r.Files, reader, r.pipeline.Lines, start)
	defer stopProgress()
	readErr := reader.Replay(readCtx, r.patterns, r.store.Position, chunks)
	if readCtx.Err() != nil && ctx.Err() == nil {
		readErr = nil // merely stopped by a pipeline error
	}
	close(chunks)
	return errors.Join(readErr, <-done)
}

// summarize prints what a replay that started at start did, and returns
// its error, saying that a replay that failed on its first lines committed
// nothing.
func (r *replayCmd) summarize(start time.Time, err error) error {
	sum := r.pipeline.Summary(len(r.patterns), time.Since(start))
	sum.Kept = r.store.Kept()
	fmt.Fprint(r.proc.Stdout, sum)
	if isMostlyRejected(err) {
		return fmt.Errorf("replay committed nothing: %w", err)
	}
	return err
}

// Close closes the database.
func (r *replayCmd) Close() error { return r.counting.close() }
