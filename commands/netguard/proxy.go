package netguard

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// Proxy is an HTTP forward proxy on 127.0.0.1 whose only way out is a Guard's dialer:
// CONNECT tunnels for https and absolute-URI requests for http. A program pointed at it
// (git with -c http.proxy=URL) never resolves or connects by itself, so whatever it makes
// of a host name, the guard's reading is the one that connects.
type Proxy struct {
	guard *Guard
	ln    net.Listener
	srv   *http.Server
	rp    *httputil.ReverseProxy

	mu       sync.Mutex
	refused  error          // the first dial the guard refused or could not make
	tunnels  sync.WaitGroup // CONNECT copies still running
	closed   bool
	hijacked []net.Conn
}

// NewProxy starts a proxy that dials through g on 127.0.0.1 at a free port. Close it.
func NewProxy(g *Guard) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netguard: proxy: %w", err)
	}
	p := &Proxy{guard: g, ln: ln}
	transport := &http.Transport{
		Proxy:                 nil, // never another proxy: the guard must do the dialling
		DialContext:           p.dial,
		ResponseHeaderTimeout: time.Minute,
		DisableKeepAlives:     true,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL; r.Out.Host = r.In.Host },
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "agentd proxy: "+err.Error(), http.StatusForbidden)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's address, for http.proxy or HTTPS_PROXY.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Refused returns the first dial error (a *BlockedError, *HostError or resolver error),
// or nil: what to tell the model when the program behind the proxy failed.
func (p *Proxy) Refused() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Close stops the proxy and ends its tunnels.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.hijacked {
		c.Close()
	}
	p.mu.Unlock()
	p.tunnels.Wait()
	return err
}

// dial goes through the guard and remembers the first failure.
func (p *Proxy) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := p.guard.DialContext(ctx, network, address)
	if err != nil {
		p.mu.Lock()
		if p.refused == nil {
			p.refused = err
		}
		p.mu.Unlock()
	}
	return c, err
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.Host != "":
		r.Header.Del("Proxy-Authorization")
		r.Header.Del("Proxy-Connection")
		p.rp.ServeHTTP(w, r)
	default:
		http.Error(w, "agentd proxy: only CONNECT and absolute http:// requests", http.StatusBadRequest)
	}
}

// connect opens a tunnel to r.Host through the guard.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), DefaultDialTimeout+5*time.Second)
	defer cancel()
	up, err := p.dial(ctx, "tcp", r.Host)
	if err != nil {
		http.Error(w, "agentd proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "agentd proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		up.Close()
		down.Close()
		return
	}
	p.hijacked = append(p.hijacked, down, up)
	p.tunnels.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.tunnels.Done()
		defer up.Close()
		defer down.Close()
		if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			io.Copy(up, buf) // what the client sent after the request, then the rest
			closeWrite(up)
			close(done)
		}()
		io.Copy(down, up)
		closeWrite(down)
		<-done
	}()
}

// closeWrite half-closes c so the other side sees the end of the stream.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
