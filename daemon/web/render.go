package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

//go:embed templates
var templates embed.FS

// page is what the layout shows around every page's content.
type page struct {
	Title string
	// Nav is the menu entry to mark as current.
	Nav  string
	CSRF string
	// Flash is a note from the last action (why a decision was refused).
	Flash string
	// Events is the event stream this page follows (the SSE URL), "" for none.
	Events string
	// Data is the page's own view.
	Data any
}

type loginView struct{ Note string }

// funcs are the templates' helpers; none builds HTML from strings.
var funcs = template.FuncMap{
	"ago": ago,
	"inzone": func(t time.Time, zone string) string {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
		}
		return t.In(loc).Format("Mon 2006-01-02 15:04 MST")
	},
	"maxText":  func() int { return api.MaxTextBytes },
	"add":      func(a, b int) int { return a + b },
	"pageRows": func() int { return agentsPageRows },
}

// ago is when something happened, in UTC to the second.
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// parsePages parses each page template with the layout and the shared fragments.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templates, "templates/layout.tmpl", "templates/fragments.tmpl")
	if err != nil {
		return nil, fmt.Errorf("web console: templates: %w", err)
	}
	names, err := fs.Glob(templates, "templates/page_*.tmpl")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{"": base}
	for _, n := range names {
		t, err := template.Must(base.Clone()).ParseFS(templates, n)
		if err != nil {
			return nil, fmt.Errorf("web console: template %s: %w", n, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/page_"), ".tmpl")
		pages[name] = t
	}
	return pages, nil
}

// render writes page name for r's session, with its CSRF token and flash note.
func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	p := page{Title: name, Nav: name, Data: data}
	if id := sessionOf(r); id != "" {
		p.CSRF, p.Flash = csrfOf(r), c.auth.takeFlash(id)
	}
	if v, ok := data.(interface{ events() string }); ok {
		p.Events = v.events()
	}
	c.renderTo(w, http.StatusOK, name, p, data)
}

// renderTo executes page name into a buffer first, so a template error is a clean 500
// rather than half a page.
func (c *Console) renderTo(w http.ResponseWriter, status int, name string, p page, data any) {
	p.Data = data
	if p.Title == "" {
		p.Title = name
	}
	var b bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		c.log.Error("web console: template failed", "page", name, "err", err)
		http.Error(w, "the console could not draw this page; the daemon's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fragment renders a shared fragment (a table row, a stream entry) for an event.
func (c *Console) fragment(name string, data any) (string, error) {
	var b strings.Builder
	err := c.pages[""].ExecuteTemplate(&b, name, data)
	return b.String(), err
}
