package cron

import (
	"testing"
	"time"
)

// TestNextFixedInstants checks fire times at fixed instants: time zones, both daylight-
// saving changes, month ends, @every and seconds.
func TestNextFixedInstants(t *testing.T) {
	tests := []struct {
		name, spec, after string
		want              []string
	}{
		// America/New_York: 2026-03-08 02:00 EST → 03:00 EDT; 2026-11-01 02:00 EDT → 01:00 EST.
		{"new_york_spring_forward_fires_after_gap", "CRON_TZ=America/New_York 30 2 * * *", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"new_york_spring_forward_real_time_unchanged", "CRON_TZ=America/New_York 30 3 * * *", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-09T03:30:00-04:00"}},
		{"new_york_fall_back_fires_once", "CRON_TZ=America/New_York 30 1 * * *", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"new_york_fall_back_started_in_repeat", "CRON_TZ=America/New_York 30 1 * * *", "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"new_york_wildcard_skips_gap", "CRON_TZ=America/New_York */30 * * * *", "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"}},
		{"new_york_wildcard_runs_both_hours", "CRON_TZ=America/New_York 0 * * * *", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		// Europe/Berlin: 2026-03-29 02:00 CET → 03:00 CEST; 2026-10-25 03:00 CEST → 02:00 CET.
		{"berlin_spring_forward_fires_after_gap", "CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"berlin_gap_times_fire_once", "CRON_TZ=Europe/Berlin 0,15,30,45 2 * * *", "2026-03-29T01:50:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
		{"berlin_gap_and_real_time_fire_once", "CRON_TZ=Europe/Berlin 0 2,3 * * *", "2026-03-29T01:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
		{"berlin_fall_back_fires_once", "CRON_TZ=Europe/Berlin 30 2 * * *", "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"berlin_fall_back_hourly_runs_both", "CRON_TZ=Europe/Berlin @hourly", "2026-10-25T01:30:00+02:00",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"}},
		{"berlin_daily_unaffected", "CRON_TZ=Europe/Berlin @daily", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00"}},
		// Zones whose changes are odd: midnight skipped, half an hour, a whole day.
		{"havana_midnight_skipped", "CRON_TZ=America/Havana @daily", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},
		{"lord_howe_half_hour_gap", "CRON_TZ=Australia/Lord_Howe 15 2 * * *", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"apia_skipped_day_robfig_hangs", "CRON_TZ=Pacific/Apia 0 0 1 * *", "2011-12-01T00:00:00-10:00",
			[]string{"2012-01-01T00:00:00+14:00", "2012-02-01T00:00:00+14:00"}},
		{"apia_skipped_day_fires_after", "CRON_TZ=Pacific/Apia 0 12 * * *", "2011-12-29T13:00:00-10:00",
			[]string{"2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"}},
		// Month ends.
		{"day_31_skips_short_months", "CRON_TZ=UTC 0 0 31 * *", "2026-01-31T00:00:00Z",
			[]string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"}},
		{"february_29_leap_years", "CRON_TZ=UTC 0 0 29 2 *", "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"last_minute_of_year", "CRON_TZ=UTC 59 23 31 12 *", "2026-06-01T00:00:00Z",
			[]string{"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"}},
		{"rule_based_zone_past_2037", "CRON_TZ=America/New_York 0 0 1 * *", "2040-12-01T00:00:00-05:00",
			[]string{"2041-01-01T00:00:00-05:00", "2041-02-01T00:00:00-05:00"}},
		// @every keeps elapsed time across a change and drops sub-seconds.
		{"every_across_spring_forward", "CRON_TZ=America/New_York @every 90m", "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-08T05:00:00-04:00"}},
		{"every_drops_fraction", "CRON_TZ=UTC @every 1m", "2026-01-01T00:00:00.5Z",
			[]string{"2026-01-01T00:01:00Z"}},
		{"seconds_field", "CRON_TZ=UTC 15 30 9 * * *", "2026-01-01T09:30:15Z",
			[]string{"2026-01-02T09:30:15Z"}},
		{"seconds_field_in_gap", "CRON_TZ=Europe/Berlin 15 30 2 * * *", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:15+02:00"}},
		{"cron_tz_weekdays", "CRON_TZ=Asia/Tokyo 0 9 * * 1-5", "2026-01-02T00:00:00Z",
			[]string{"2026-01-05T09:00:00+09:00", "2026-01-06T09:00:00+09:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			after, err := time.Parse(time.RFC3339Nano, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			checkTimes(t, Next(s, after, len(tt.want)), tt.want)
		})
	}
}

func TestNextShowsFive(t *testing.T) {
	s, err := Parse("CRON_TZ=UTC 0 9 * * 1-5")
	if err != nil {
		t.Fatal(err)
	}
	got := Next(s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5)
	checkTimes(t, got, []string{"2026-01-01T09:00:00Z", "2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z",
		"2026-01-06T09:00:00Z", "2026-01-07T09:00:00Z"})
	if got := Next(Spec{}, time.Now(), 5); len(got) != 0 {
		t.Errorf("the zero Spec fires: %v", got)
	}
}

// TestNextDSTZones walks fixed-time and wildcard specs across years in zones with
// daylight saving: fire times only go forward, and a fixed-time spec never fires twice at
// the same wall-clock time (a fall-back repeats one).
func TestNextDSTZones(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "America/Havana", "Australia/Lord_Howe",
		"America/Santiago", "Asia/Tehran", "Pacific/Apia", "Antarctica/Troll", "Europe/Dublin"}
	specs := []struct {
		spec  string
		fixed bool
	}{{"30 2 * * *", true}, {"0 0 * * *", true}, {"59 23 * * *", true}, {"0 1-3 * * *", true}, {"*/20 * * * *", false}}
	for _, z := range zones {
		for _, sp := range specs {
			s, err := Parse("CRON_TZ=" + z + " " + sp.spec)
			if err != nil {
				t.Fatal(err)
			}
			prev := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
			seen := map[string]bool{}
			for range 1500 {
				next := s.Next(prev)
				if !next.After(prev) {
					t.Fatalf("%s %s: Next(%v) = %v", z, sp.spec, prev, next)
				}
				wall := next.Format(time.DateTime)
				if sp.fixed && seen[wall] {
					t.Errorf("%s %s: fired twice at %s", z, sp.spec, wall)
				}
				seen[wall] = true
				prev = next
			}
		}
	}
}
