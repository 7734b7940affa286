// Package localapi serves agentd's local API: HTTP+JSON under /v0/ on a unix socket (mode 0600).
//
// It sits between the front ends and the daemon. agentctl, and anything else that uses
// api, talks to the Handler over the socket made by Listen; the Handler decodes
// each request, calls the Service the daemon implements (daemon/agent's Supervisor's parts, composed by daemon/server) and
// writes the reply. Event streams are NDJSON, one client.Event per line. Errors are JSON
// {"error": "..."} with a status taken from the error (client.ErrNotFound → 404, …).
//
// The wire types live in api, which never imports the daemon; this package is
// the daemon's side of the same contract, and its tests drive it through the real Client.
package localapi
