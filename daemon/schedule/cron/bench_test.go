package cron

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// benchSchedules returns n schedules firing hourly at spread minutes, in a few zones, so
// about n/60 fire each minute.
func benchSchedules(b *testing.B, n int) []Schedule {
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Tokyo"}
	out := make([]Schedule, n)
	for i := range out {
		spec, err := Parse(fmt.Sprintf("CRON_TZ=%s %d * * * *", zones[i%len(zones)], i%60))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = Schedule{ID: fmt.Sprintf("s%05d", i), Spec: spec, LastFired: day(8, 0)}
	}
	return out
}

// BenchmarkAdd10000 is the start-up cost of 10,000 schedules, missed firings included.
func BenchmarkAdd10000(b *testing.B) {
	scheds := benchSchedules(b, 10_000)
	for b.Loop() {
		s := New(Config{Starter: Starter(func(context.Context, Firing) (string, error) { return "r", nil }),
			Clock: fakeClock{testutil.NewClock(day(9, 30))}})
		for _, sc := range scheds {
			if err := s.Add(sc); err != nil {
				b.Fatal(err)
			}
		}
		s.tick(context.Background())
	}
}

// BenchmarkMinute10000 is the scheduler's work for one minute with 10,000 schedules.
func BenchmarkMinute10000(b *testing.B) {
	clk := fakeClock{testutil.NewClock(day(9, 0))}
	n := 0
	s := New(Config{Starter: Starter(func(context.Context, Firing) (string, error) {
		n++
		return fmt.Sprint("r", n), nil
	}), Clock: clk})
	for _, sc := range benchSchedules(b, 10_000) {
		sc.Concurrency = ConcurrencyParallel
		if err := s.Add(sc); err != nil {
			b.Fatal(err)
		}
	}
	s.tick(context.Background())
	for b.Loop() {
		clk.Set(clk.Now().Add(time.Minute))
		s.tick(context.Background())
	}
}
