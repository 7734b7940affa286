package netguard

import (
	"net/url"
	"strings"
	"testing"
)

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
