package netguard

import (
	"net/url"
	"strings"
	"testing"
)

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
