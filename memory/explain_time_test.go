package memory

import "testing"

// Explain's date follows the same reading of a question as search's dates field.
func TestAsksAboutTime(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  bool
	}{
		{"When did Ana go to the pottery workshop?", true},
		{"What year did Ben start teaching?", true},
		{"What did Ana do in May 2023?", true},
		{"What happened last week?", true},
		{"Where did they go in 2022?", true},
		{"What does Ana like to paint?", false},
		{"Which books did Ben read?", false},
	} {
		if got := AsksAboutTime(tt.query); got != tt.want {
			t.Errorf("AsksAboutTime(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}
