package schedule

import (
	"testing"
	"time"
)

func TestExpMono(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "America/Havana", "Australia/Lord_Howe", "America/Santiago", "America/Asuncion", "Asia/Tehran", "America/Sao_Paulo", "Pacific/Apia", "Antarctica/Troll", "Europe/Dublin", "Africa/Casablanca"}
	specs := []string{"30 2 * * *", "0 0 * * *", "* * * * *", "0 * * * *", "*/7 1-3 * * *", "15 0,1,2,3 * * 0", "0 0 1 * *", "59 23 * * *", "30 0 29 2 *", "0 0-23 * * *", "1,59 2,3 * * *"}
	bad := 0
	for _, z := range zones {
		for _, sp := range specs {
			s, err := Parse("CRON_TZ=" + z + " " + sp)
			if err != nil {
				t.Fatal(err)
			}
			from := time.Date(2008, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < 4000; i++ {
				n := s.Next(from)
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
		}
	}
}
