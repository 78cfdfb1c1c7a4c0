package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/logtally/logtally/api"
)

// serveConfig is how run serves: the API's address and settings, what
// readiness asks of the files, and where the profiles are.
type serveConfig struct {
	Listen string // API address
	// DebugListen, if set, is where run serves Go's pprof profiles: how to
	// see where memory and CPU go on a production box.
	DebugListen string
	// RequireFiles makes a followed path or glob that matches no file a
	// readiness failure, rather than only a warning and a status.
	RequireFiles bool
	API          api.Config
}

func (c *serveConfig) registerFlags(fs *flag.FlagSet) {
	c.Listen = "127.0.0.1:8080"
	fs.Var(addressValue{stringRef{&c.Listen}}, "listen", "API listen `address`")
	fs.Var(addressValue{stringRef{&c.DebugListen}}, "debug-listen",
		"serve Go's pprof profiles under /debug/pprof/ on this `address`; off when empty (keep it on loopback)")
	fs.BoolVar(&c.RequireFiles, "require-files", false,
		"make /readyz fail while a followed path or glob matches no file (they are reported either way)")
	c.API.RegisterFlags(fs)
}

// servers are run's HTTP servers: the API, and the profiles if asked.
type servers struct {
	api, debug     *http.Server
	apiLn, debugLn net.Listener
}

// serveAPI serves the API that cfg and deps make.
func (s *servers) serveAPI(cfg serveConfig, deps api.Deps, log *slog.Logger, paths int, db string) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	s.apiLn = ln
	handler := api.New(cfg.API, deps)
	s.api = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    api.MaxHeaderBytes, // the handler answers past its own limits, in JSON
	}
	// Shutdown waits for responses to end, and an event stream never does
	// by itself: ending them is the handler's part.
	s.api.RegisterOnShutdown(handler.Close)
	go s.api.Serve(ln)
	log.Info("serving", "addr", ln.Addr().String(), "paths", paths, "db", db)
	return nil
}

// serveDebug serves the pprof profiles on their own listener, apart from
// the API, so that they are never exposed where the API is.
func (s *servers) serveDebug(addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--debug-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.debugLn = ln
	s.debug = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 60 * time.Second}
	go s.debug.Serve(ln)
	log.Info("serving profiles", "addr", ln.Addr().String())
	return nil
}

// close shuts the API down, letting responses end, and the profiles at
// once (a profile being taken is cut short).
func (s *servers) close() error {
	var errs []error
	if s.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errs = append(errs, s.api.Shutdown(ctx))
		s.api = nil
	}
	if s.debug != nil {
		errs = append(errs, s.debug.Close())
		s.debug = nil
	}
	return errors.Join(errs...)
}
