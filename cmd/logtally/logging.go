package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// LogConfig chooses how run and replay log.
type LogConfig struct {
	Format string // text or json
	Level  string // debug, info, warn, error
}

// RegisterFlags registers the logging flags on fs.
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	c.Format, c.Level = "text", "info"
	fs.Var(choiceValue{stringRef{&c.Format}, []string{"text", "json"}}, "log-format", "log format: text or json")
	fs.Var(levelValue{stringRef{&c.Level}}, "log-level", "least severe level logged: debug, info, warn or error")
}

// Logger returns the configured logger, writing to w.
func (c LogConfig) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", c.Format)
}
