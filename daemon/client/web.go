package client

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

// WebService is the web console's part of the API.
type WebService interface {
	// WebLogin starts the web console on 127.0.0.1 when it is not serving yet and mints
	// a one-time login URL.
	WebLogin(ctx context.Context) (*WebLogin, error)
}

// WebLoginRoute serves Service.WebLogin.
var WebLoginRoute = register(Route[None, *WebLogin]{Method: "POST", Path: "/v0/web/login",
	Call: func(ctx context.Context, s Service, _ string, _ None) (*WebLogin, error) { return s.WebLogin(ctx) }})

// WebLogin starts the web console if it is off and returns a one-time login URL.
func (c *Client) WebLogin(ctx context.Context) (*WebLogin, error) {
	return call(ctx, c, WebLoginRoute, "", None{})
}
