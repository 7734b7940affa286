package api

import "context"

// WebLogin is where the web console serves and a one-time URL that logs a browser in
// (agentctl web).
type WebLogin struct {
	// URL is the console's address, like http://127.0.0.1:7077/.
	URL string `json:"url"`
	// LoginURL logs one browser in, once, within ten minutes; it holds a secret token,
	// so it is shown to the person who asked and never logged.
	LoginURL string `json:"login_url"`
}

// WebLogout is what ending every web console session did (agentctl web logout).
type WebLogout struct {
	// Sessions is how many logged-in browsers were logged out; their live streams
	// stopped at once. Login URLs not used yet stopped working too.
	Sessions int `json:"sessions"`
}

// WebService is the web console's part of the API.
type WebService interface {
	// WebLogin starts the web console on 127.0.0.1 when it is not serving yet and mints
	// a one-time login URL.
	WebLogin(ctx context.Context) (*WebLogin, error)
	// WebLogout logs every browser out of the web console and spends every login URL.
	WebLogout(ctx context.Context) (*WebLogout, error)
}

// WebLoginRoute serves Service.WebLogin.
var WebLoginRoute = register(Route[None, *WebLogin]{Method: "POST", Path: "/v0/web/login",
	Call: byNothing(Service.WebLogin)})

// WebLogoutRoute serves Service.WebLogout.
var WebLogoutRoute = register(Route[None, *WebLogout]{Method: "POST", Path: "/v0/web/logout",
	Call: byNothing(Service.WebLogout)})
