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
	"sync"
	"syscall"
	"time"

	"github.com/logtally/logtally/api"
)

// defaultAdminListen is where the admin listener is unless told: the
// machine itself, where the README's tour and a curl on the box reach it.
const defaultAdminListen = "127.0.0.1:8080"

// shutdownTimeout is how long Close lets the API's answers end.
const shutdownTimeout = 10 * time.Second

// serveConfig is how run serves: its two listeners (see api.Listener) and
// the API's settings, what readiness asks of the files, and where the
// profiles are.
type serveConfig struct {
	// AdminListen is the operator's address: every endpoint, the status,
	// the metrics and the dashboard among them. Off loopback it needs a
	// token (AdminTokenFile).
	AdminListen string
	// PublicListen, if set, is where the public figures, and only they,
	// are served: the address to publish. Off when empty.
	PublicListen string
	// AdminTokenFile holds the token the admin listener asks for; none
	// when empty.
	AdminTokenFile string
	// DebugListen, if set, is where run serves Go's pprof profiles: how to
	// see where memory and CPU go on a production box.
	DebugListen string
	// RequireFiles makes a followed path or glob that matches no file a
	// readiness failure, rather than only a warning and a status.
	RequireFiles bool
	API          api.Config

	// listen is the deprecated --listen, the old name of --admin-listen;
	// adminSet says whether --admin-listen was given (on the command line
	// or in the environment); adminFlag is the one of the two that set
	// AdminListen, for the messages.
	listen    string
	adminSet  bool
	adminFlag string
}

func (c *serveConfig) registerFlags(fs *flag.FlagSet) {
	c.AdminListen = defaultAdminListen
	fs.Var(setValue{addressValue{stringRef{&c.AdminListen}}, &c.adminSet}, "admin-listen",
		"serve the whole API (status, /metrics, the dashboard and the public figures) on this `address`; off loopback it needs --admin-token-file")
	fs.Var(addressValue{stringRef{&c.PublicListen}}, "public-listen",
		"serve only the public figures (stats, pages, series, sites, counters, ratios, the event stream, the widget), read-only and with the CORS headers, on this `address`, the one to publish; off when empty")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", "",
		"require the token this `file` holds on the admin listener (Authorization: Bearer TOKEN, or TOKEN as the password of basic authentication)")
	fs.Var(addressValue{stringRef{&c.listen}}, "listen", "deprecated: the old name of --admin-listen (the `address` of the whole API); the public figures have --public-listen")
	fs.Var(addressValue{stringRef{&c.DebugListen}}, "debug-listen",
		"serve Go's pprof profiles under /debug/pprof/ on this `address`; off when empty (keep it on loopback)")
	fs.BoolVar(&c.RequireFiles, "require-files", false,
		"make /readyz fail while a followed path or glob matches no file (they are reported either way; a file that cannot be read always fails it)")
	c.API.RegisterFlags(fs)
}

// servers are run's HTTP servers: the admin and public listeners of the
// API, and the profiles if asked.
type servers struct {
	admin, public, debug       *http.Server
	adminLn, publicLn, debugLn net.Listener
}

// listen opens the listeners cfg asks for, the API's and the profiles',
// before anything else starts: an address in use is reported before a
// database file is created. Close closes them.
func (s *servers) listen(cfg serveConfig) (err error) {
	if s.adminLn, err = listenOn(cfg.adminFlag, cfg.AdminListen); err != nil {
		return err
	}
	if cfg.PublicListen != "" {
		if s.publicLn, err = listenOn("--public-listen", cfg.PublicListen); err != nil {
			return err
		}
	}
	if cfg.DebugListen != "" {
		if s.debugLn, err = listenOn("--debug-listen", cfg.DebugListen); err != nil {
			return err
		}
	}
	return nil
}

// listenOn listens on addr, which flag gave, and says what to do when it
// cannot.
func listenOn(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	_, port, _ := net.SplitHostPort(addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s: %w: another program listens there (ss -ltnp 'sport = :%s' names it): stop it, or give %s another address",
			flag, addr, syscall.EADDRINUSE, port, flag)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("%s %s: %w: a port below 1024 needs root or CAP_NET_BIND_SERVICE: give a port above 1023",
			flag, addr, syscall.EACCES)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("%s %s: %w: no network interface of this machine has that address: give one it has, such as 127.0.0.1:%s",
			flag, addr, syscall.EADDRNOTAVAIL, port)
	}
	return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
}

// serveAPI serves the API that cfg and deps make on the listeners that
// listen opened: every endpoint on the admin listener, and the public
// figures on the public one if asked.
func (s *servers) serveAPI(cfg serveConfig, deps api.Deps, log *slog.Logger, paths int, db string) {
	handler := api.New(cfg.API, deps)
	s.admin = apiServer(handler, api.Admin)
	go s.admin.Serve(s.adminLn)
	log.Info("serving", "addr", s.adminLn.Addr().String(), "listener", "admin", "token", cfg.API.AdminToken != "",
		"paths", paths, "db", db)
	if s.publicLn != nil {
		s.public = apiServer(handler, api.Public)
		go s.public.Serve(s.publicLn)
		log.Info("serving the public figures", "addr", s.publicLn.Addr().String(), "listener", "public")
	}
}

// apiServer returns the server of listener l of handler.
func apiServer(handler *api.Server, l api.Listener) *http.Server {
	srv := &http.Server{
		Handler:           handler.Handler(l),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    api.MaxHeaderBytes, // the handler answers past its own limits, in JSON
	}
	// Shutdown waits for responses to end, and an event stream never does
	// by itself: ending them is the handler's part (once for both).
	srv.RegisterOnShutdown(handler.Close)
	return srv
}

// serveDebug serves the pprof profiles on their own listener, apart from
// the API, so that they are never exposed where the API is.
func (s *servers) serveDebug(log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.debug = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 60 * time.Second}
	go s.debug.Serve(s.debugLn)
	log.Info("serving profiles", "addr", s.debugLn.Addr().String())
}

// close shuts both listeners of the API down together, letting responses
// end for up to shutdownTimeout, and the profiles at once (a profile being
// taken is cut short). A listener opened but not yet served is closed.
func (s *servers) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, srv := range []*http.Server{s.admin, s.public} {
		if srv != nil {
			wg.Go(func() { errs[i] = srv.Shutdown(ctx) })
		}
	}
	wg.Wait()
	for _, ln := range []net.Listener{s.adminLn, s.publicLn} {
		if ln != nil && s.admin == nil {
			ln.Close() // the API failed to start: nothing serves it
		}
	}
	if s.debug != nil {
		errs[2] = s.debug.Close()
	} else if s.debugLn != nil {
		s.debugLn.Close() // not served yet
	}
	s.admin, s.public, s.debug = nil, nil, nil
	return errors.Join(errs...)
}
