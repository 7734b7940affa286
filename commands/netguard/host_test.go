package netguard

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		name  string
		host  string
		ip    string // the address it is; "" when a name or refused
		host2 string // the name to resolve; "" when an address or refused
		bad   bool   // refused as ambiguous
	}{
		{name: "dotted", host: "127.0.0.1", ip: "127.0.0.1"},
		{name: "public", host: "93.184.215.14", ip: "93.184.215.14"},
		{name: "short_two_parts", host: "127.1", ip: "127.0.0.1"},
		{name: "short_three_parts", host: "127.0.1", ip: "127.0.0.1"},
		{name: "short_last_part_fills", host: "10.65535", ip: "10.0.255.255"},
		{name: "short_three_last_fills", host: "10.1.65535", ip: "10.1.255.255"},
		{name: "decimal", host: "2130706433", ip: "127.0.0.1"},
		{name: "decimal_zero", host: "0", ip: "0.0.0.0"},
		{name: "decimal_max", host: "4294967295", ip: "255.255.255.255"},
		{name: "hex", host: "0x7f000001", ip: "127.0.0.1"},
		{name: "hex_upper", host: "0X7F000001", ip: "127.0.0.1"},
		{name: "hex_no_digits", host: "0x", ip: "0.0.0.0"},
		{name: "hex_padded", host: "0x00000000000000007f000001", ip: "127.0.0.1"},
		{name: "octal", host: "017700000001", ip: "127.0.0.1"},
		{name: "octal_dotted", host: "0177.0.0.1", ip: "127.0.0.1"},
		{name: "octal_part_looks_decimal", host: "010.0.0.1", ip: "8.0.0.1"},
		{name: "zero_padded_parts", host: "127.000.000.001", ip: "127.0.0.1"},
		{name: "hex_dotted", host: "0x7f.0x0.0x0.0x1", ip: "127.0.0.1"},
		{name: "hex_short", host: "0x7f.1", ip: "127.0.0.1"},
		{name: "mixed_bases", host: "0x7f.0.00.1", ip: "127.0.0.1"},
		{name: "mixed_short", host: "0177.0x1", ip: "127.0.0.1"},
		{name: "trailing_dot", host: "127.0.0.1.", ip: "127.0.0.1"},
		{name: "trailing_dot_decimal", host: "2130706433.", ip: "127.0.0.1"},
		{name: "metadata_short", host: "169.254.43518", ip: "169.254.169.254"},
		{name: "fullwidth_digits", host: "１２７.０.０.１", ip: "127.0.0.1"},
		{name: "ideographic_dots", host: "127。0。0。1", ip: "127.0.0.1"},
		{name: "fullwidth_dots", host: "127．0．0．1", ip: "127.0.0.1"},
		{name: "fullwidth_hex", host: "０ｘ７ｆ０００００１", ip: "127.0.0.1"},
		{name: "v6_loopback", host: "::1", ip: "::1"},
		{name: "v6_bracketed", host: "[::1]", ip: "::1"},
		{name: "v6_upper", host: "FE80::1", ip: "fe80::1"},
		{name: "v6_zone", host: "fe80::1%eth0", ip: "fe80::1%eth0"},
		{name: "v6_mapped", host: "::ffff:127.0.0.1", ip: "::ffff:127.0.0.1"},
		{name: "v6_mapped_zone", host: "::ffff:127.0.0.1%lo", ip: "::ffff:127.0.0.1%lo"},
		{name: "v6_nat64", host: "64:ff9b::127.0.0.1", ip: "64:ff9b::7f00:1"},
		{name: "v6_full", host: "0:0:0:0:0:0:0:1", ip: "::1"},
		{name: "name", host: "example.com", host2: "example.com"},
		{name: "name_upper", host: "Example.COM", host2: "example.com"},
		{name: "name_trailing_dot", host: "example.com.", host2: "example.com"},
		{name: "name_numeric_prefix", host: "127.0.0.1.nip.io", host2: "127.0.0.1.nip.io"},
		{name: "name_hex_label_first", host: "0x7f.example", host2: "0x7f.example"},
		{name: "name_digit_start", host: "1password.com", host2: "1password.com"},
		{name: "name_not_hex", host: "0x7g", host2: "0x7g"},
		{name: "name_underscore", host: "_dmarc.example.com", host2: "_dmarc.example.com"},
		{name: "name_localhost", host: "localhost", host2: "localhost"},
		{name: "name_idn", host: "bücher.example", host2: "xn--bcher-kva.example"},
		{name: "name_punycode", host: "xn--bcher-kva.example", host2: "xn--bcher-kva.example"},
		{name: "five_parts", host: "1.2.3.4.5", bad: true},
		{name: "bad_octal", host: "08.0.0.1", bad: true},
		{name: "bad_octal_last", host: "127.0.0.09", bad: true},
		{name: "overflow", host: "4294967296", bad: true},
		{name: "part_overflow", host: "127.256.0.1", bad: true},
		{name: "last_part_overflow", host: "127.0.0.256", bad: true},
		{name: "short_last_overflow", host: "127.16777216", bad: true},
		{name: "hex_overflow", host: "0x100000000", bad: true},
		{name: "empty_part", host: "127..1", bad: true},
		{name: "leading_dot", host: ".127.0.0.1", bad: true},
		{name: "double_trailing_dot", host: "127.0.0.1..", bad: true},
		{name: "name_double_trailing_dot", host: "example.com..", bad: true},
		{name: "percent", host: "%31%32%37.0.0.1", bad: true},
		{name: "percent_literal", host: "127.0.0.1%2e", bad: true},
		{name: "space", host: "127.0.0.1 evil", bad: true},
		{name: "nul", host: "127.0.0.1\x00.evil.example", bad: true},
		{name: "backslash", host: `127.1\`, bad: true},
		{name: "plus_sign", host: "+127.0.0.1", bad: true},
		{name: "underscore_not_a_number", host: "127.0.0_1", host2: "127.0.0_1"},
		{name: "v6_short_v4", host: "::ffff:127.1", bad: true},
		{name: "v6_hex_v4", host: "::ffff:0x7f.0.0.1", bad: true},
		{name: "v6_garbage", host: "[::1::2]", bad: true},
		{name: "brackets_v4", host: "[127.0.0.1]", bad: true},
		{name: "empty", host: "", bad: true},
		{name: "label_too_long", host: "a234567890123456789012345678901234567890123456789012345678901234.example", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ip, name, err := ParseHost(tc.host)
			if tc.bad {
				if err == nil || !errors.Is(err, ErrBadHost) {
					t.Fatalf("ParseHost(%q) = %v, %q, %v; want ErrBadHost", tc.host, ip, name, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHost(%q): %v", tc.host, err)
			}
			got := ""
			if ip.IsValid() {
				got = ip.String()
			}
			if got != tc.ip || name != tc.host2 {
				t.Errorf("ParseHost(%q) = %q, %q; want %q, %q", tc.host, got, name, tc.ip, tc.host2)
			}
		})
	}
}

func TestHostErrorSaysTheFix(t *testing.T) {
	_, _, err := ParseHost("1.2.3.4.5")
	want := `host "1.2.3.4.5" looks like a numeric address but is no valid one; give a plain host name like example.com or an address like 93.184.215.14`
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

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

func TestDescribeHostOfTrickyURLs(t *testing.T) {
	raws := []string{
		"http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/", "http://127.1/", "http://[::ffff:127.0.0.1]/",
		"http://[fe80::1%25eth0]/", "http://xn--e1afmkfd.xn--p1ai/", "http://пример.рф/", "http://good.com@evil.com/",
		"http://good.com%40evil.com/", "http://evil.com\\@good.com/", "http://evil.com./", "http://evil。com/",
		"http://ev%69l.com/", "http://EVIL.com:80/", "http://evil.com:0080/", "http://[::1]:80/", "http://0/",
		"http://127.0.0.1.nip.io/", "http://1.2.3.4.5/", "http://0x7f000001/", "http://017700000001/", "http://127.0.0.1:/",
		"http://a.com:8080@b.com/", "http://ＥＶＩＬ.com/", "http://evil.com%2f@good/", "http://[0:0:0:0:0:ffff:7f00:1]/",
		"http://%31%32%37.0.0.1/", "http://evil.com\t/", "http://ß.de/", "http://faß.de/", "http://xn--fa-hia.de/",
	}
	for _, r := range raws {
		u, err := url.Parse(r)
		if err != nil {
			t.Logf("%q parse err %v", r, err)
			continue
		}
		d := DescribeHost(u)
		ip, name, perr := ParseHost(u.Hostname())
		switch {
		case perr != nil:
			if !strings.Contains(d, "not a host the guard can read") {
				t.Errorf("%q: %s; want it marked unreadable (%v)", r, d, perr)
			}
		case ip.IsValid():
			if !strings.Contains(d, ip.String()) {
				t.Errorf("%q: %s; want the address %s the guard connects to", r, d, ip)
			}
		default:
			if !strings.HasPrefix(d, name+":") {
				t.Errorf("%q: %s; want the name %s the guard resolves", r, d, name)
			}
		}
		if strings.Contains(d, ":00") {
			t.Errorf("%q: %s shows the port as written, not the number it connects to", r, d)
		}
	}
}

// A kind that starts with a vowel reads "an": "0.0.0.0:80 (written "0"), an unspecified address".
func TestDescribeHostArticle(t *testing.T) {
	u, _ := url.Parse("http://0/")
	if d := DescribeHost(u); !strings.Contains(d, "an unspecified address") {
		t.Errorf("DescribeHost(http://0/) = %s; want it to say an unspecified address", d)
	}
}

// Every encoded loopback/private form must be described as the address it is.
func TestDescribeEncodedFormsAsTheirAddress(t *testing.T) {
	for _, raw := range []string{
		"http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/", "http://127.1/",
		"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://user:pw@127.0.0.1/",
		"http://127.0.0.1.:80/", "http://[0:0:0:0:0:ffff:169.254.169.254]/", "http://0x7f.1/",
		"http://[::1%25lo]/", "http://0/",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Logf("%s: url.Parse: %v", raw, err)
			continue
		}
		d := DescribeHost(u)
		t.Logf("%s → %s", raw, d)
		if !strings.Contains(d, "address") && !strings.Contains(d, "cannot read") {
			t.Errorf("%s → %s: no address kind named", raw, d)
		}
		if strings.Contains(d, "pw") {
			t.Errorf("%s → %s: user info shown", raw, d)
		}
	}
}
