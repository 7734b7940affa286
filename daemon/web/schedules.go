package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/schedule/cron"
)

// scheduleRow is one schedule with its next fire times in its own zone.
type scheduleRow struct {
	api.Schedule
	Name, Goal string
}

// schedulesView is the schedules page: every schedule and the form to add one.
type schedulesView struct {
	Rows []scheduleRow
	// Zone is the zone a spec without one is read in: the machine's.
	Zone string
}

func (c *Console) schedulesPage(w http.ResponseWriter, r *http.Request) {
	ss, err := c.svc.Schedules(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	v := schedulesView{Rows: make([]scheduleRow, len(ss)), Zone: time.Local.String()}
	for i, s := range ss {
		// The list carries the next fire time; one schedule carries the next few.
		if one, err := c.svc.Schedule(r.Context(), s.ID); err == nil {
			s = *one
		}
		if len(s.NextTimes) == 0 && !s.Next.IsZero() {
			s.NextTimes = []time.Time{s.Next}
		}
		v.Rows[i] = scheduleRow{Schedule: s, Name: line(s.Name), Goal: text(s.Goal)}
	}
	c.render(w, r, "schedules", v)
}

// scheduleAction pauses or resumes a schedule.
func (c *Console) scheduleAction(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("schedule")
	var err error
	switch r.PathValue("action") {
	case "pause":
		_, err = c.svc.PauseSchedule(r.Context(), ref)
	case "resume":
		_, err = c.svc.ResumeSchedule(r.Context(), ref)
	default:
		http.Error(w, "no such action: a schedule can be paused or resumed here", http.StatusNotFound)
		return
	}
	note := ""
	if err != nil {
		note = err.Error()
	}
	c.back(w, r, "/schedules", note)
}

// addSchedule creates a schedule from the form; the daemon checks it all again.
func (c *Console) addSchedule(w http.ResponseWriter, r *http.Request) {
	req := api.ScheduleRequest{Name: r.PostFormValue("name"), Spec: r.PostFormValue("spec"), TimeZone: strings.TrimSpace(r.PostFormValue("time_zone")),
		Agent: strings.TrimSpace(r.PostFormValue("agent")), Template: strings.TrimSpace(r.PostFormValue("template")),
		Goal: strings.TrimSpace(r.PostFormValue("goal"))}
	var err error
	if req.When, err = whenOf(r.PostForm); err != nil {
		c.back(w, r, "/schedules", "not added: "+err.Error())
		return
	}
	s, err := c.svc.AddSchedule(r.Context(), req)
	if err != nil {
		c.back(w, r, "/schedules", "not added: "+err.Error())
		return
	}
	c.back(w, r, "/schedules", "added "+line(s.Name))
}

// specView is what the spec check shows under the spec field as the person types.
type specView struct {
	OK    bool
	Error string
	Zone  string
	Next  []string
}

// checkSpec parses a cron spec with the daemon's own parser (daemon/schedule/cron, the
// one AddSchedule uses) in the zone given, and answers with the next fire times or what
// is wrong, as an HTML fragment the page puts under the field.
func (c *Console) checkSpec(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("part") == "when" {
		c.checkWhen(w, r)
		return
	}
	v := specView{}
	loc := time.Local
	if z := strings.TrimSpace(r.FormValue("time_zone")); z != "" {
		l, err := time.LoadLocation(z)
		if err != nil {
			v.Error = "time zone " + line(z) + " is not an IANA zone name, like Europe/Paris or UTC"
		}
		loc = l
	}
	if v.Error == "" {
		spec, err := cron.ParseIn(r.FormValue("spec"), loc)
		if err != nil {
			v.Error = line(err.Error())
		} else {
			v.OK, v.Zone = true, spec.Location().String()
			for _, t := range cron.Next(spec, time.Now(), 3) {
				v.Next = append(v.Next, t.In(spec.Location()).Format("Mon 2006-01-02 15:04 MST"))
			}
		}
	}
	html, err := c.fragment("speccheck", v)
	if err != nil {
		c.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(html))
}
