package config

import (
	"net"
	"strconv"
)

// WebConsoleConfig is the [web_console] section: the browser console that shows every
// agent and takes decisions (daemon/web). Not to be confused with [web_commands], the agents' web
// tools. It is off unless enabled here or started with `agentctl web`, and it binds a
// loopback address only: it has no TLS, and a login is a token printed to the local user.
type WebConsoleConfig struct {
	// Enabled serves the console from the daemon's start; `agentctl web` starts it anyway.
	Enabled bool `toml:"enabled"`
	// Listen is the loopback host:port it binds; port 0 picks a free one.
	Listen string `toml:"listen"`
}

func defaultWebConsole() WebConsoleConfig {
	return WebConsoleConfig{Listen: "127.0.0.1:7077"}
}

func (w WebConsoleConfig) problems(bad func(key, format string, args ...any)) {
	host, port, err := net.SplitHostPort(w.Listen)
	if err != nil {
		bad("web_console.listen", "%q is not host:port, like %q", w.Listen, "127.0.0.1:7077")
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("web_console.listen", "port %q in %q is not a number from 0 to 65535", port, w.Listen)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		bad("web_console.listen", "%q is not a loopback IP: the console decides what agents run and has no TLS, "+
			"so it binds 127.0.0.1 or [::1] only (reach it from elsewhere through an SSH tunnel)", w.Listen)
	}
}
