package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// A host found down by the prober shows why in status: the transport's own error
// (connection refused, a DNS failure) or how long it gave no answer, never the probe's
// own ended context.
func TestPoolDownHostShowsTheRealCause(t *testing.T) {
	refused := func() string { // a port nothing listens on any more
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr
	}
	silent := func() string { // accepts connections and never answers
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				held = append(held, c)
			}
		}()
		return "http://" + ln.Addr().String()
	}
	for _, tc := range []struct {
		name string
		url  func() string
		want string
	}{
		{"connection_refused", refused, "connection refused"},
		{"no_answer_in_time", silent, "no answer within 200ms"},
		{"unknown_host_name", func() string { return "http://agentd-no-such-host.invalid:11434" }, "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: tc.url()}}, HTTP: &http.Client{},
				Backoff: backoff.Policy{Base: time.Hour, Max: time.Hour}, Refresh: time.Hour, CheckTimeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var h HostStatus
			testutil.Eventually(t, 10*time.Second, "the prober to find the host down", func() bool {
				h = c.PoolStatus().Hosts[0]
				return !h.Up
			})
			if !strings.Contains(h.Error, tc.want) || strings.Contains(h.Error, "context canceled") {
				t.Errorf("down host's reason = %q, want one saying %q", h.Error, tc.want)
			}
		})
	}
}

// Recheck asks the hosts again at once: a server that died since the last probe is shown
// down with its cause, and a call for its model then says why no host can serve it.
func TestPoolRecheckFindsADeadHostNow(t *testing.T) {
	a := ollamatest.NewFake(t)
	c := newTestPool(t, 1, a) // its prober would look again in an hour
	waitListed(t, c)
	a.Close()
	c.Recheck(context.Background(), 0)
	h := c.PoolStatus().Hosts[0]
	if h.Up || !strings.Contains(h.Error, "connection refused") || time.Since(h.Checked) > time.Minute {
		t.Errorf("after a recheck the dead host shows up=%v, error %q, checked %v", h.Up, h.Error, h.Checked)
	}
	err := chatOnce(context.Background(), c, ollamatest.TinyModelName)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a call with the only host dead: %v, want ErrUnavailable naming the cause", err)
	}
}
