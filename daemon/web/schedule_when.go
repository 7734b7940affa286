package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

// whenOf reads the schedule form's wake conditions (paths and URLs one per line, one
// check command and whether it may reach the network, any/all, the failure policy);
// nil when none is given.
func whenOf(form url.Values) (*api.WakeConditions, error) {
	lines := func(key string) []string {
		var out []string
		for _, l := range strings.Split(form.Get(key), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	f := api.WhenFlags{Changed: lines("when_changed"), URLs: lines("when_url"), All: form.Get("when_combine") == "all",
		OnFailure: strings.TrimSpace(form.Get("when_failed")), Network: form.Get("when_network") != ""}
	if f.OnFailure == "skip" {
		f.OnFailure = "" // the form's default
	}
	if line := strings.TrimSpace(form.Get("when")); line != "" {
		f.Commands = []string{line}
	}
	if n := strings.TrimSpace(form.Get("when_failed_after")); n != "" {
		v, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("failures in a row %q: give a whole number, e.g. 3", n)
		}
		f.FailAfter = v
	}
	return f.Conditions() // the daemon checks the rest, as it checks agentctl's
}

// whenView is what the conditions check shows under the fields as the person types.
type whenView struct {
	OK          bool
	Error, When string
}

// checkWhen checks the form's wake conditions as the daemon checks their form
// (Options.CheckWhen: no I/O; whether a path exists is checked when the form is sent).
func (c *Console) checkWhen(w http.ResponseWriter, r *http.Request) {
	v := whenView{}
	when, err := whenOf(r.Form)
	if err == nil && when != nil && c.checkWhenForm != nil {
		var words string
		if words, err = c.checkWhenForm(*when); err == nil {
			v.When = line(words)
		}
	}
	switch {
	case err != nil:
		v.Error = line(err.Error())
	case when == nil:
		v.OK, v.When = true, "every firing wakes the model"
	default:
		v.OK, v.When = true, "wakes the model when "+v.When
	}
	html, err := c.fragment("whencheck", v)
	if err != nil {
		c.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(html))
}
