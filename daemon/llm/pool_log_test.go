package llm

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestPoolSaysWhereCallsGoWhileAHostIsDown: with other hosts, a host down sends its calls
// to them; with one host there is nowhere else, and the log says the calls wait.
func TestPoolSaysWhereCallsGoWhileAHostIsDown(t *testing.T) {
	for _, tc := range []struct {
		name, want, notWant string
		hosts               int
	}{
		{"one_host", "its calls wait for it", "other hosts", 1},
		{"two_hosts", "its calls go to the other hosts", "wait for it", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fakes []*ollamatest.Fake
			var hosts []HostConfig
			for range tc.hosts {
				f := ollamatest.NewFake(t)
				fakes = append(fakes, f)
				hosts = append(hosts, HostConfig{URL: f.URL(), Slots: 1})
			}
			var logs testutil.SyncBuffer
			c, err := NewPool(PoolOptions{Hosts: hosts, HTTP: &http.Client{}, Backoff: testBackoff, Refresh: time.Hour,
				Log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			waitListed(t, c)
			fakes[0].SetDown(true)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go chatOnce(ctx, c, ollamatest.TinyModelName)
			testutil.Eventually(t, 30*time.Second, "the host marked down", func() bool { return strings.Contains(logs.String(), "ollama host down") })
			if got := logs.String(); !strings.Contains(got, tc.want) || strings.Contains(got, tc.notWant) {
				t.Errorf("log, want %q and not %q:\n%s", tc.want, tc.notWant, got)
			}
		})
	}
}
