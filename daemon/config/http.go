package config

import (
	"net"
	"path/filepath"
	"strconv"
)

// HTTPConfig is the [http] section: the optional TCP listener for Prometheus metrics and
// the Agent Protocol. The local API stays on the unix socket; this listener is
// off unless Listen is set, binds loopback unless AllowRemote, and wants a bearer token
// for everything but /metrics.
type HTTPConfig struct {
	// Listen is host:port, like "127.0.0.1:7070"; "" keeps the listener off.
	Listen string `toml:"listen"`
	// AllowRemote lets Listen name a non-loopback address. The token is then all that
	// stands between the network and agent control, and it travels in clear text: put
	// a TLS proxy in front.
	AllowRemote bool `toml:"allow_remote"`
	// TokenEnv / TokenFile name where the bearer token is read from; a file wins over the
	// variable. The token itself never goes in this file and is never logged.
	TokenEnv  string `toml:"token_env"`
	TokenFile string `toml:"token_file"`
	// AgentProtocol serves Agent Protocol v1 under /ap/v1/ (tasks, steps, artifacts).
	AgentProtocol bool `toml:"agent_protocol"`
}

func defaultHTTP() HTTPConfig {
	return HTTPConfig{TokenEnv: "AGENTD_HTTP_TOKEN"}
}

// isLoopback reports whether host (from host:port) names only this machine: a loopback
// IP or "localhost". "" and "0.0.0.0" are every interface, so not loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h HTTPConfig) problems(bad func(key, format string, args ...any)) {
	if h.Listen != "" {
		host, port, err := net.SplitHostPort(h.Listen)
		if err != nil {
			bad("http.listen", "%q is not host:port, like %q", h.Listen, "127.0.0.1:7070")
		} else {
			if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
				bad("http.listen", "port %q in %q is not a number from 0 to 65535", port, h.Listen)
			}
			if !h.AllowRemote && !isLoopback(host) {
				what := "a loopback address"
				if host == "" {
					what = "a host (\"\" is every interface)"
				}
				bad("http.listen", "%q is not %s: the listener controls agents, so it binds 127.0.0.1 or [::1] "+
					"unless allow_remote = true (then put TLS in front)", h.Listen, what)
			}
		}
		if h.TokenEnv == "" && h.TokenFile == "" {
			bad("http.token_env", "the listener needs a bearer token: set token_env or token_file")
		}
	}
	if h.TokenEnv != "" && !envNameRE.MatchString(h.TokenEnv) {
		bad("http.token_env", "%q is not an environment variable name", h.TokenEnv)
	}
	if h.TokenFile != "" && !filepath.IsAbs(h.TokenFile) {
		bad("http.token_file", "%q is not an absolute path", h.TokenFile)
	}
}

// warnings are [http] settings that are valid but do nothing as written: the Agent
// Protocol with no listener to serve it, allow_remote on a loopback address.
func (h HTTPConfig) warnings(warn func(key, format string, args ...any)) {
	if h.AgentProtocol && h.Listen == "" {
		warn("http.agent_protocol", "nothing serves the Agent Protocol: the listener is off; set listen = %q in [http]", "127.0.0.1:7070")
	}
	if !h.AllowRemote {
		return
	}
	host, _, err := net.SplitHostPort(h.Listen)
	switch {
	case h.Listen == "":
		warn("http.allow_remote", "has no effect: the listener is off (listen is not set)")
	case err == nil && isLoopback(host):
		warn("http.allow_remote", "has no effect: listen %q is a loopback address, which other machines cannot reach; "+
			"remove allow_remote, or listen on the address they should use", h.Listen)
	}
}
