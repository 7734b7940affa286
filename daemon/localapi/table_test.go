package localapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// TestEveryRouteServed sends each route of the wire package's table to a fake with no
// funcs set: the handler must reach the fake (500 naming the route), never 404 or 405.
func TestEveryRouteServed(t *testing.T) {
	fk := &apitest.Fake{}
	h := newHandler(nil, fk.Endpoints(), fk.Streams(), nil)
	patterns := map[string]bool{}
	for _, ep := range api.Endpoints() {
		patterns[ep.Pattern()] = true
	}
	for _, st := range api.Streams() {
		patterns["GET "+st.Path] = true
	}
	for p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{agent}", "writer", "{run}", "r1", "{schedule}", "s1", "{team}", "t1", "{id}", "m1").Replace(path)
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			body := strings.NewReader("{}")
			r, _ := http.NewRequest(method, "http://local"+path, body)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "not set in this fake") {
				t.Errorf("%s %s = %d %s, want 500 from the fake", method, path, w.Code, w.Body.String())
			}
		})
	}
	if len(patterns) < 47 {
		t.Errorf("the table has %d routes, want the 47 the API served before plus new ones", len(patterns))
	}
}
