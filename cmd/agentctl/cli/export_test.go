package cli

import (
	"testing"

	"github.com/agentd/agentd/api"
)

// SetSocketPlaces makes agentctl look for agentd at places instead of this machine's
// until t ends. Not for parallel tests.
func SetSocketPlaces(t testing.TB, places []api.SocketPlace) {
	old := socketPlaces
	socketPlaces = func() []api.SocketPlace { return places }
	t.Cleanup(func() { socketPlaces = old })
}
