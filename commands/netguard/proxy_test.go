package netguard

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// proxied starts a loopback target and a proxy whose guard admits exactly that target.
func proxied(t *testing.T) (p *Proxy, target *httptest.Server, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	target = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	t.Cleanup(target.Close)
	ap := netip.MustParseAddrPort(target.Listener.Addr().String())
	p, err := NewProxy(&Guard{Resolver: fakeDNS, Exempt: func(a netip.AddrPort) bool { return a == ap }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, target, hits
}

func TestProxyForwardsPlainHTTP(t *testing.T) {
	p, target, hits := proxied(t)
	pu, _ := url.Parse(p.URL())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	port := target.Listener.Addr().(*net.TCPAddr).Port

	resp, err := client.Get(target.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello /ok" {
		t.Fatalf("through the proxy: %d %q", resp.StatusCode, body)
	}
	if p.Refused() != nil {
		t.Errorf("Refused() = %v after an allowed request", p.Refused())
	}

	// The same server under another loopback spelling and port: the guard's reading decides.
	for _, u := range []string{
		"http://127.0.0.2:" + itoa(port) + "/",
		"http://0x7f000001:" + itoa(port+1) + "/",
		"http://localhost:" + itoa(port+1) + "/",
	} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "loopback") {
			t.Errorf("GET %s: %d %q; want 403 naming loopback", u, resp.StatusCode, body)
		}
	}
	var be *BlockedError
	if err := p.Refused(); !errors.As(err, &be) || be.Kind != "loopback" {
		t.Errorf("Refused() = %v, want the first loopback refusal", err)
	}
	if hits.Load() != 1 {
		t.Errorf("target hit %d times, want once", hits.Load())
	}
}

func TestProxyTunnels(t *testing.T) {
	p, target, hits := proxied(t)
	connect := func(authority string) (*bufio.Reader, net.Conn, string) {
		c, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "CONNECT "+authority+" HTTP/1.1\r\nHost: "+authority+"\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return br, c, resp.Status
	}
	br, c, status := connect(target.Listener.Addr().String())
	if !strings.HasPrefix(status, "200") {
		t.Fatalf("CONNECT to the allowed target: %s", status)
	}
	io.WriteString(c, "GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "hello /tunnel" {
		t.Errorf("through the tunnel: %q", body)
	}
	port := itoa(target.Listener.Addr().(*net.TCPAddr).Port + 1)
	for _, authority := range []string{"127.1:" + port, "[::ffff:127.0.0.1]:" + port, "1.2.3.4.5:443", "169.254.169.254:443"} {
		if _, _, status := connect(authority); !strings.HasPrefix(status, "403") {
			t.Errorf("CONNECT %s: %s, want 403", authority, status)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("target hit %d times, want once", hits.Load())
	}
}

func TestProxyRefusesOtherRequests(t *testing.T) {
	p, _, _ := proxied(t)
	resp, err := http.Get(p.URL() + "/relative")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("origin-form request: %d, want 400", resp.StatusCode)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
