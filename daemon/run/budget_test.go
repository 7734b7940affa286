package run

import (
	"testing"
	"time"
)

// With lays a source's set fields over a budget and keeps the rest; a field set to zero
// lifts its bound.
func TestBudgetWithReplacesOnlyTheFieldsASourceSets(t *testing.T) {
	base := Budget{MaxSteps: 10, MaxTokens: 1000, MaxWall: time.Hour, MaxDisk: 1 << 20}
	steps, wall := 3, 0*time.Second
	tests := []struct {
		name string
		got  Budget
		want Budget
	}{
		{"none_set_keeps_all", base.With(nil, nil, nil, nil), base},
		{"set_fields_replace", base.With(&steps, nil, nil, new(int64(5))), Budget{MaxSteps: 3, MaxTokens: 1000, MaxWall: time.Hour, MaxDisk: 5}},
		{"zero_lifts_a_bound", base.With(nil, new(int64(0)), &wall, nil), Budget{MaxSteps: 10, MaxWall: 0, MaxDisk: 1 << 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %+v, want %+v", tc.got, tc.want)
			}
		})
	}
}
