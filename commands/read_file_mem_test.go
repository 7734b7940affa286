package commands

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReadFileLineRangeMemoryBounded checks that a line-range read holds at most about
// what it can show, however long the file's lines or however many of them are in range:
// a file the model's shell made (a sparse one of zeros, one line of 48 MiB, a million
// short lines) must not make the daemon hold it whole.
func TestReadFileLineRangeMemoryBounded(t *testing.T) {
	s := newSandbox(t)
	const size = 48 << 20
	sparse, err := os.Create(filepath.Join(s.ws, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(size); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	long := strings.Repeat("a", size) + "\nend\n"
	if err := os.WriteFile(filepath.Join(s.ws, "oneline.txt"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ws, "many.txt"), []byte(strings.Repeat("line\n", size/5)), 0o644); err != nil {
		t.Fatal(err)
	}
	long = ""
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{name: "sparse_zeros_past_range", args: map[string]any{"path": "sparse", "start_line": 2}, want: "[sparse has 1 lines; none from line 2 on]"},
		{name: "long_line_past_range", args: map[string]any{"path": "oneline.txt", "start_line": 2}, want: "[lines 2-2 of 2 in oneline.txt]\nend"},
		{name: "long_line_in_range", args: map[string]any{"path": "oneline.txt", "start_line": 1}, want: "[lines 1-"},
		{name: "many_lines_in_range", args: map[string]any{"path": "many.txt", "start_line": 1}, want: "[lines 1-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := run(t, "read_file", s.ws, tt.args, Limits{})
			runtime.ReadMemStats(&after)
			if err != nil || !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %.200q, %v; want it to start with %q", got, err, tt.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("reading allocated %d MiB; want the read bounded by what it can show", alloc>>20)
			}
		})
	}
}
