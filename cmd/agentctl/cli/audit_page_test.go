package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/api"
)

// busyAuditEntries is how long the fake daemon's audit log of agent "busy" is.
const busyAuditEntries = 12_345

// One listing holds at most 10,000 entries; a larger --limit pages back instead of
// stopping there or failing.
func TestAuditLimitPastOneListingPages(t *testing.T) {
	tests := []struct {
		name         string
		limit        string
		first, last  int64
		count, calls int
	}{
		{"within_one_listing", "10000", busyAuditEntries - 9_999, busyAuditEntries, 10_000, 1},
		{"two_pages", "12000", busyAuditEntries - 11_999, busyAuditEntries, 12_000, 2},
		{"more_than_the_log_holds", "30000", 1, busyAuditEntries, busyAuditEntries, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDaemon(t)
			r := runCLI(t, "", "--socket", f.sock, "--json", "audit", "--agent", "busy", "--limit", tt.limit)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var list []api.AuditEntry
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				t.Fatal(err)
			}
			if len(list) != tt.count {
				t.Fatalf("%d entries, want %d", len(list), tt.count)
			}
			if list[0].ID != tt.first || list[len(list)-1].ID != tt.last {
				t.Errorf("ids %d..%d, want %d..%d", list[0].ID, list[len(list)-1].ID, tt.first, tt.last)
			}
			for i := 1; i < len(list); i++ {
				if list[i].ID != list[i-1].ID+1 {
					t.Fatalf("entry %d has id %d after %d: pages overlap or leave a gap", i, list[i].ID, list[i-1].ID)
				}
			}
			if got := int(f.auditCalls.Load()); got != tt.calls {
				t.Errorf("%d listings asked, want %d", got, tt.calls)
			}
		})
	}
}
