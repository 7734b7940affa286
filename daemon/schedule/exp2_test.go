package schedule

import (
	"testing"
	"time"
)

func TestExpMono(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "America/Havana", "Australia/Lord_Howe", "America/Santiago", "America/Asuncion", "Asia/Tehran", "America/Sao_Paulo", "Pacific/Apia", "Antarctica/Troll", "Europe/Dublin", "Africa/Casablanca", "Pacific/Kiritimati", "America/Godthab", "Asia/Gaza", "Europe/Moscow", "America/Caracas"}
	specs := []string{"30 2 * * *", "0 0 * * *", "* * * * *", "0 * * * *", "*/7 1-3 * * *", "15 0,1,2,3 * * 0", "0 0 1 * *", "59 23 * * *", "30 0 29 2 *", "0 0-23 * * *", "1,59 2,3 * * *"}
	bad := 0
	for _, z := range zones {
		for _, sp := range specs {
			s, err := Parse("CRON_TZ=" + z + " " + sp)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			from := time.Date(2008, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < 3000; i++ {
				done := make(chan time.Time)
				go func() { done <- s.Next(from) }()
				var n time.Time
				select {
				case n = <-done:
				case <-time.After(2 * time.Second):
					t.Fatalf("hang %s %s from %v", z, sp, from.In(s.loc))
				}
				if n.IsZero() && from.Year() >= 2096 {
					break
				}
				if !n.After(from) {
					bad++
					if bad < 20 {
						t.Errorf("%s %s from %v got %v", z, sp, from.In(s.loc), n)
					}
					from = from.Add(time.Hour)
					continue
				}
				from = n
			}
			t.Log(z, sp, time.Since(start), from)
		}
	}
}
