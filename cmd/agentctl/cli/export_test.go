package cli

import (
	"testing"

	"github.com/agentd/agentd/daemon/client"
)

// SetSocketPlaces makes agentctl look for agentd at places instead of this machine's
// until t ends. Not for parallel tests.
func SetSocketPlaces(t testing.TB, places []client.SocketPlace) {
	old := socketPlaces
	socketPlaces = func() []client.SocketPlace { return places }
	t.Cleanup(func() { socketPlaces = old })
}
