package llm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/ollamatest"
)

// A caller waiting out ErrUnavailable is woken when a host that serves its model comes
// back, not at the end of its own backoff; a caller waiting for a model no host has
// sleeps on.
func TestPoolServableWakesWhenAHostComesBack(t *testing.T) {
	a := ollamatest.NewFake(t)
	c := newTestPool(t, 1, a)
	waitListed(t, c)
	a.SetDown(true)
	if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	back, stop := c.Servable(ollamatest.TinyModelName)
	defer stop()
	absent, stopAbsent := c.Servable("absent")
	defer stopAbsent()
	select {
	case <-back:
		t.Fatal("woken while the only host is down")
	default:
	}
	a.SetDown(false)
	select {
	case <-back:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken 10s after the host came back")
	}
	// Both were looked at under one lock when the host came back.
	select {
	case <-absent:
		t.Error("a wait for a model the host does not have ended")
	default:
	}
	c.Pool().mu.Lock()
	n := len(c.Pool().watches)
	c.Pool().mu.Unlock()
	if n != 1 {
		t.Errorf("%d waits held, want the one still waiting", n)
	}
}

// A model kept off a host after it failed there wakes its callers when its time off ends.
func TestPoolServableWakesWhenAModelIsLetBackOn(t *testing.T) {
	a := ollamatest.NewFake(t)
	c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}}, Backoff: testBackoff, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitListed(t, c)
	p := c.Pool()
	p.mu.Lock()
	p.markModelTrouble(p.hosts[0], ollamatest.TinyModelName, errors.New("HTTP 500: model requires more system memory"))
	p.mu.Unlock()
	back, stop := c.Servable(ollamatest.TinyModelName)
	defer stop()
	select {
	case <-back:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken 10s after the model's time off the host ended")
	}
}
