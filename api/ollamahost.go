package api

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultOllamaHost is where Ollama listens unless $OLLAMA_HOST or the config says otherwise.
const DefaultOllamaHost = "http://127.0.0.1:11434"

// ParseOllamaHost reads an Ollama server's address the way Ollama's own client reads
// OLLAMA_HOST ("127.0.0.1:11434", "gpu-box", ":11434", "https://ollama.example/prefix", ""
// for DefaultOllamaHost): a missing scheme is http, a missing port 11434 (80 or 443 when
// the scheme is written). Unlike Ollama it refuses a bad value instead of using the
// default. The model client and the config's checks both read hosts with it.
func ParseOllamaHost(s string) (*url.URL, error) {
	s = strings.Trim(strings.TrimSpace(s), `"'`)
	if s == "" {
		s = DefaultOllamaHost
	}
	defaultPort := "11434"
	scheme, hostport, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		scheme, hostport = "http", s
		if s == "ollama.com" {
			scheme, hostport = "https", "ollama.com:443"
		}
	case scheme == "http":
		defaultPort = "80"
	case scheme == "https":
		defaultPort = "443"
	default:
		return nil, fmt.Errorf("ollama host %q: scheme must be http or https", s)
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		h, port = strings.Trim(hostport, "[]"), defaultPort
	}
	if h == "" {
		h = "127.0.0.1"
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("ollama host %q: bad port %q", s, port)
	}
	if strings.ContainsAny(h, " /?#@") {
		return nil, fmt.Errorf("ollama host %q: bad host name %q", s, h)
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(h, port)}
	if path = strings.Trim(path, "/"); path != "" {
		u.Path = "/" + path
	}
	return u, nil
}
