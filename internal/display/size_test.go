package display

import "testing"

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 2 << 30: "2 GiB", 3 << 29: "1.5 GiB", 10<<30 + 1: "10.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "2GiB": 2 << 30, "2 GiB": 2 << 30, "1.5G": 3 << 29,
		"512MiB": 512 << 20, "512m": 512 << 20, "10GB": 10e9, "64 kib": 64 << 10, " 1 TiB ": 1 << 40} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "2 gigs", "-1GiB", "1e3", "2..5G", "9999999999TiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}
