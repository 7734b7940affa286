package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	tests := []struct {
		name, spec string
		want       []string // the first fire times after 2026-01-01T00:00:00Z, RFC 3339
	}{
		{"five_fields", "0 9 * * *", []string{"2026-01-01T09:00:00Z", "2026-01-02T09:00:00Z"}},
		{"seconds_first", "30 0 9 * * *", []string{"2026-01-01T09:00:30Z", "2026-01-02T09:00:30Z"}},
		{"names_and_ranges", "0 9 * jan mon-fri", []string{"2026-01-01T09:00:00Z", "2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z"}},
		{"list_and_step", "0,30 */12 * * *", []string{"2026-01-01T00:30:00Z", "2026-01-01T12:00:00Z", "2026-01-01T12:30:00Z"}},
		{"question_mark", "0 0 1 * ?", []string{"2026-02-01T00:00:00Z"}},
		{"dom_or_dow", "0 0 13 * fri", []string{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z"}},
		{"extra_whitespace", "  0\t9  * * *\n", []string{"2026-01-01T09:00:00Z"}},
		{"daily", "@daily", []string{"2026-01-02T00:00:00Z"}},
		{"midnight", "@midnight", []string{"2026-01-02T00:00:00Z"}},
		{"hourly", "@hourly", []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
		{"weekly", "@weekly", []string{"2026-01-04T00:00:00Z"}},
		{"monthly", "@monthly", []string{"2026-02-01T00:00:00Z"}},
		{"yearly", "@yearly", []string{"2027-01-01T00:00:00Z"}},
		{"annually_upper_case", "@ANNUALLY", []string{"2027-01-01T00:00:00Z"}},
		{"every_90m", "@every 90m", []string{"2026-01-01T01:30:00Z", "2026-01-01T03:00:00Z"}},
		{"every_minimum", "@every 1m", []string{"2026-01-01T00:01:00Z"}},
		{"cron_tz", "CRON_TZ=Asia/Tokyo 0 10 * * *", []string{"2026-01-01T10:00:00+09:00", "2026-01-02T10:00:00+09:00"}},
		{"tz", "TZ=America/New_York 0 9 * * *", []string{"2026-01-01T09:00:00-05:00"}},
		{"tz_then_tab_robfig_panics", "TZ=Europe/Berlin\t0 9 * * *", []string{"2026-01-01T09:00:00+01:00"}},
		{"tz_descriptor", "CRON_TZ=Asia/Kolkata @daily", []string{"2026-01-02T00:00:00+05:30", "2026-01-03T00:00:00+05:30"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseIn(tt.spec, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			checkTimes(t, Next(s, after, len(tt.want)), tt.want)
			again, err := ParseIn(s.String(), time.UTC)
			if err != nil || again.String() != s.String() {
				t.Errorf("Parse(%q) = %q, %v; want it back", s.String(), again.String(), err)
			}
		})
	}
}

func TestParseDefaultsToLocal(t *testing.T) {
	s, err := Parse("0 9 * * *")
	if err != nil {
		t.Fatal(err)
	}
	if s.Location() != time.Local {
		t.Errorf("Location() = %v, want Local", s.Location())
	}
	if s, _ := Parse("CRON_TZ=UTC 0 9 * * *"); s.Location() != time.UTC {
		t.Errorf("CRON_TZ=UTC: Location() = %v", s.Location())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, spec, want string }{
		{"empty", "", "is empty: want five fields"},
		{"blank", " \t ", "is empty"},
		{"tz_zero_robfig_panics", "TZ=0", `unknown time zone "0"`},
		{"cron_tz_alone_robfig_panics", "CRON_TZ=Asia/Tokyo", "has nothing after CRON_TZ=Asia/Tokyo"},
		{"tz_alone_robfig_panics", "TZ=UTC", "has nothing after TZ=UTC"},
		{"tz_empty_robfig_panics", "TZ=", "TZ= without a zone"},
		{"cron_tz_empty_zone", "CRON_TZ= 0 9 * * *", "CRON_TZ= without a zone"},
		{"unknown_zone", "CRON_TZ=Mars/Olympus 0 9 * * *", `unknown time zone "Mars/Olympus"`},
		{"zone_path", "CRON_TZ=../../etc/passwd 0 9 * * *", "unknown time zone"},
		{"unknown_prefix", "FOO=bar 0 9 * * *", `unknown "FOO="`},
		{"lower_case_prefix", "cron_tz=UTC 0 9 * * *", `unknown "cron_tz="`},
		{"one_field", "daily", "has 1 field: want 5"},
		{"four_fields", "0 9 * *", "has 4 fields: want 5"},
		{"seven_fields", "0 0 9 * * * *", "has 7 fields"},
		{"minute_60", "60 9 * * *", `minute field "60": 60 is out of range 0-59`},
		{"hour_24", "0 24 * * *", `hour field "24": 24 is out of range 0-23`},
		{"day_of_month_0", "0 0 0 * *", `day-of-month field "0": 0 is out of range 1-31`},
		{"month_13", "0 0 1 13 *", `month field "13": 13 is out of range 1-12`},
		{"month_name", "0 0 1 foo *", `month field "foo": "foo" is not a number or a name such as jan`},
		{"day_of_week_7", "0 9 * * 7", `day-of-week field "7": 7 is out of range 0-6; Sunday is 0`},
		{"backwards_range", "0 9-5 * * *", "range 9-5 runs backwards"},
		{"backwards_names", "0 9 * * sat-sun", "range sat-sun runs backwards"},
		{"zero_step", "*/0 * * * *", `step "0" is not a positive whole number`},
		{"signed_step", "*/+5 * * * *", `step "+5" is not a positive whole number`},
		{"two_slashes", "*/2/3 * * * *", `step "2/3"`},
		{"negative", "-1 * * * *", `range "-1" needs a number at each end`},
		{"star_range", "*-5 * * * *", "* cannot start a range"},
		{"three_part_range", "1-2-3 * * * *", `"2-3" is not a number`},
		{"empty_list_item", "1,,2 * * * *", "empty item in a list"},
		{"trailing_comma", "1, * * * *", "empty item in a list"},
		{"huge_number", "99999999999999999999 * * * *", "out of range 0-59"},
		{"control_character", "0 9 * * *\x00", `day-of-week field "*\x00"`},
		{"invalid_utf8", "0 9 * * \xff", `day-of-week field "\xff"`},
		{"every_second", "* * * * * *", `seconds field "*": give one second`},
		{"seconds_step", "*/5 * * * * *", "schedules fire at most once a minute"},
		{"seconds_60", "60 0 9 * * *", `seconds field "60"`},
		{"never_fires_feb_30", "0 0 30 2 *", "never fires"},
		{"never_fires_apr_31", "0 0 31 4 *", "never fires"},
		{"every_30s", "@every 30s", "fires too often: @every must be at least 1m0s"},
		{"every_zero", "@every 0s", "must be positive"},
		{"every_negative", "@every -1h", "must be positive"},
		{"every_fraction", "@every 90.5s", "use whole seconds"},
		{"every_no_duration", "@every", "needs one duration after @every"},
		{"every_two_durations", "@every 1h 2h", "needs one duration"},
		{"every_bad_duration", "@every soon", `has "soon" after @every, which is not a duration`},
		{"every_overflow", "@every 9999999999h", "not a duration"},
		{"unknown_descriptor", "@fortnightly", `unknown descriptor "@fortnightly"`},
		{"descriptor_arguments", "@daily 9", `has "9" after @daily, which takes nothing`},
		{"descriptor_after_fields", "0 9 @daily * *", `day-of-month field "@daily"`},
		{"too_long", strings.Repeat("1,", 120) + "1 * * * *", "is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want an error", tt.spec, s.String())
			}
			if !errors.Is(err, ErrSpec) {
				t.Errorf("error %v does not wrap ErrSpec", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error:\n  %v\nwant it to contain:\n  %s", tt.spec, err, tt.want)
			}
			if !s.IsZero() || !s.Next(time.Now()).IsZero() {
				t.Errorf("a failed Parse returned a Spec that fires")
			}
		})
	}
}

// FuzzParse checks that no spec panics Parse or Next, that errors name the spec, and that
// what parses round-trips and fires in order.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 9 * * *", "30 0 9 * * 1-5", "CRON_TZ=Asia/Tokyo 0 9 * * *", "TZ=0",
		"CRON_TZ=Asia/Tokyo", "TZ=UTC\t@daily", "@every 90m", "@hourly", "*/5 1-3 * jan mon",
		"0 0 29 2 *", "0 0 31 4 *", "CRON_TZ=America/New_York 30 2 * * *", "1,2-3/4 * * * *"} {
		f.Add(s)
	}
	after := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("error %v does not wrap ErrSpec", err)
			}
			return
		}
		if again, err := Parse(s.String()); err != nil || again.String() != s.String() {
			t.Fatalf("Parse(%q) ok, but Parse(%q) = %v", spec, s.String(), err)
		}
		prev := after
		for _, next := range Next(s, after, 3) {
			if !next.After(prev) {
				t.Fatalf("%q: Next went from %v to %v", spec, prev, next)
			}
			prev = next
		}
	})
}

func checkTimes(t *testing.T, got []time.Time, want []string) {
	t.Helper()
	var gs []string
	for _, g := range got {
		gs = append(gs, g.Format(time.RFC3339))
	}
	if strings.Join(gs, " ") != strings.Join(want, " ") {
		t.Errorf("fire times:\n  got  %v\n  want %v", gs, want)
	}
}

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
