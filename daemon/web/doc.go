// Package web is agentd's local web console: one page with every agent, what waits for a
// person, and the controls to decide, served by the daemon on 127.0.0.1 only.
//
// It is a front end like agentctl and the chat bots: it reads and decides through the
// daemon's one Service (the same Decide, bound to the proposal's Hash, the same event
// stream agentctl follows), so authorization stays in one place. What it adds is a
// browser's threat model: a one-time login token becomes an HttpOnly, SameSite=Strict
// session cookie; every POST carries a CSRF token; requests naming another Host (DNS
// rebinding) or coming from another origin are refused; a strict Content-Security-Policy
// forbids inline script and framing. Pages are html/template (auto-escaping) over text
// already made visible by display.Escape, so model-made strings stay inert. Assets are
// embedded; nothing is fetched from the internet.
package web
