package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/schedule/wake"
)

// whenOf reads the schedule form's wake conditions (paths and URLs one per line, one
// check command, any/all, the failure policy); nil when none is given.
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
		OnFailure: strings.TrimSpace(form.Get("when_failed"))}
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
	c, err := f.Conditions()
	if err != nil || c == nil || !wake.Conditions(*c).Empty() {
		return c, err
	}
	_, err = wake.Conditions(*c).Check() // a policy without conditions: says what is missing
	return nil, err
}

// whenView is what the conditions check shows under the fields as the person types.
type whenView struct {
	OK          bool
	Error, When string
}

// checkWhen checks the form's wake conditions as the daemon checks their form (the
// wake package's Check: no I/O; whether a path exists is checked when the form is sent).
func (c *Console) checkWhen(w http.ResponseWriter, r *http.Request) {
	v := whenView{}
	when, err := whenOf(r.Form)
	if err == nil && when != nil {
		var checked wake.Conditions
		if checked, err = wake.Conditions(*when).Check(); err == nil {
			v.When = line(checked.String())
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
