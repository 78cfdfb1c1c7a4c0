package deploy

import (
	"net"
	"strings"
)

// listeners is where logtally listens, as its flags, then the container's
// environment, then the image's, decide.
type listeners struct {
	public, admin string
	// legacy is the deprecated --listen (LOGTALLY_LISTEN), an alias of
	// --admin-listen; "" if nothing sets it.
	legacy string
}

// defaultAdmin is --admin-listen's default.
const defaultAdmin = "127.0.0.1:8080"

// listenersOf works out the listeners of logtally started with args under
// env (the image's environment overlaid by the container's).
func listenersOf(env map[string]string, args []string) listeners {
	setting := func(flag string) string {
		v := env["LOGTALLY_"+strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))]
		for i, a := range args {
			if a == "--" {
				break
			}
			name := strings.TrimLeft(a, "-")
			if !strings.HasPrefix(a, "-") || name == "" {
				continue
			}
			if n, val, ok := strings.Cut(name, "="); ok && n == flag {
				v = val
			} else if name == flag && i+1 < len(args) {
				v = args[i+1]
			}
		}
		return v
	}
	l := listeners{public: setting("public-listen"), admin: setting("admin-listen"), legacy: setting("listen")}
	if l.admin == "" {
		l.admin = l.legacy
	}
	if l.admin == "" {
		l.admin = defaultAdmin
	}
	return l
}

// problems says what is wrong with where logtally listens in a container:
// the public listener is the one to publish, and the admin listener must
// stay on loopback on a port of its own.
func (l listeners) problems() []string {
	var problems []string
	if l.legacy != "" {
		problems = append(problems, "sets LOGTALLY_LISTEN (--listen) to "+l.legacy+
			", the deprecated alias of --admin-listen: set LOGTALLY_PUBLIC_LISTEN for what may be published and LOGTALLY_ADMIN_LISTEN on loopback")
	}
	if l.public == "" {
		problems = append(problems, "no public listener: set LOGTALLY_PUBLIC_LISTEN (--public-listen), such as 0.0.0.0:8080")
	}
	if !loopback(l.admin) {
		problems = append(problems, "the admin listener "+l.admin+" is not on loopback: status, metrics and the dashboard would be reachable from outside the container")
	}
	if l.public != "" && port(l.public) == port(l.admin) {
		problems = append(problems, "the public listener "+l.public+" and the admin listener "+l.admin+" share port "+port(l.public)+
			": put the admin listener on a port of its own, such as LOGTALLY_ADMIN_LISTEN=127.0.0.1:8081")
	}
	return problems
}

// loopback tells whether addr listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// port is addr's port, or addr itself if it has none.
func port(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil {
		return p
	}
	return addr
}
