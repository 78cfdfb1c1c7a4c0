// Command logtally turns web-server access logs into live visitor counts.
//
//	logtally run [flags] [FILE...]    follow logs and serve the JSON API
//	logtally replay [flags] FILE...   read logs to their end, commit, report
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "logtally:", err)
		os.Exit(2)
	}
	if err := m.Run(ctx); err != nil {
		m.Close()
		fmt.Fprintln(os.Stderr, "logtally:", err)
		os.Exit(1)
	}
	if m.Command == "run" {
		<-ctx.Done()
	}
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "logtally:", err)
		os.Exit(1)
	}
}
