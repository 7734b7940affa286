package schedule

import (
	"testing"
	"time"
)

func TestExp(t *testing.T) {
	for _, c := range []struct{ spec, from string }{
		{"CRON_TZ=America/New_York 30 2 * * *", "2026-03-07T12:00:00-05:00"},
		{"CRON_TZ=America/New_York 30 1 * * *", "2026-10-31T12:00:00-04:00"},
		{"CRON_TZ=America/New_York */30 * * * *", "2026-11-01T00:00:00-04:00"},
		{"CRON_TZ=America/New_York */30 * * * *", "2026-03-08T00:00:00-05:00"},
		{"CRON_TZ=America/Havana @daily", "2026-03-06T12:00:00-05:00"},
		{"CRON_TZ=America/Havana 0 0 8 * *", "2026-03-06T12:00:00-05:00"},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-28T12:00:00+01:00"},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-10-24T12:00:00+02:00"},
		{"CRON_TZ=Australia/Lord_Howe 15 2 * * *", "2026-10-03T12:00:00+10:30"},
	} {
		s, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		from, _ := time.Parse(time.RFC3339, c.from)
		t.Log(c.spec, Next(s, from, 4))
	}
	x := time.Date(2026, 3, 8, 2, 30, 0, 0, mustLoc("America/New_York"))
	t.Log(x)
}

func mustLoc(n string) *time.Location { l, _ := time.LoadLocation(n); return l }
