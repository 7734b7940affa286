package netguard

import "testing"

func TestSameURL(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{name: "tracking_and_fragment_dropped", in: " https://Example.COM:443/a/b?utm_source=x&id=4&fbclid=z#top ", want: "https://example.com/a/b?id=4", ok: true},
		{name: "query_sorted", in: "http://example.com/s?b=2&a=1", want: "http://example.com/s?a=1&b=2", ok: true},
		{name: "numeric_host_read_as_the_guard_reads_it", in: "http://0x7f.1:8080", want: "http://127.0.0.1:8080/", ok: true},
		{name: "other_port_kept", in: "https://example.com:8443/", want: "https://example.com:8443/", ok: true},
		{name: "leading_zeros_read_as_the_port_reached", in: "http://example.com:0080/a", want: "http://example.com/a", ok: true},
		{name: "port_out_of_range", in: "http://example.com:99999/", want: "http://example.com:99999/", ok: false},
		{name: "not_http", in: "ftp://example.com/x", want: "ftp://example.com/x", ok: false},
		{name: "not_a_url", in: "notes.txt", want: "notes.txt", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SameURL(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("SameURL(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}
