package structure

import (
	"slices"
	"testing"
)

func TestReturnsCountsComingBackToALeftFile(t *testing.T) {
	tests := []struct {
		name  string
		walk  []string
		files []string
		n     int
	}{
		{"one_file", []string{"a", "a", "a"}, []string{"a"}, 0},
		{"down_and_back", []string{"a", "b", "a"}, []string{"a", "b", "a"}, 1},
		{"layers", []string{"a", "b", "c"}, []string{"a", "b", "c"}, 0},
		{"back_and_forth", []string{"a", "b", "a", "b", "a"}, []string{"a", "b", "a", "b", "a"}, 3},
		{"calls_within_a_file", []string{"a", "b", "b", "c", "b", "a"}, []string{"a", "b", "c", "b", "a"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, n := returns(tt.walk)
			if !slices.Equal(files, tt.files) || n != tt.n {
				t.Fatalf("returns(%v) = %v, %d; want %v, %d", tt.walk, files, n, tt.files, tt.n)
			}
		})
	}
}

func TestUpwardLinksAreCyclesOrToTheTop(t *testing.T) {
	l := &Links{
		Files: []string{"top.go", "a.go", "b.go", "c.go", "leaf.go"},
		To: map[string][]string{
			"a.go":   {"b.go", "leaf.go", "top.go"}, // b.go links back: a cycle; top.go is the top
			"b.go":   {"a.go", "leaf.go"},
			"c.go":   {"leaf.go"},
			"top.go": {"a.go"}, // the top using its parts runs down
		},
		Top: "top.go",
	}
	l.count()
	if l.Total != 7 || l.Upward != 4 {
		t.Fatalf("%d links, %d upward; want 7 and 4 (a→b, b→a in a cycle, a→top, and top→a closing the cycle through the top)", l.Total, l.Upward)
	}
}
