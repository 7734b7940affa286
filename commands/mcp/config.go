// Package mcp is the bridge that turns the tools of configured MCP servers into agentd
// commands.
//
// Each configured server (a stdio command or a streamable HTTP URL) is connected with the
// go-sdk client; every tool it lists becomes a command named `server.tool` whose params are
// the tool's input schema cut down to the subset agentd's reply grammar supports. The
// daemon adds Bridge.Commands to an agent's command set; it does not register them
// globally, because they depend on config and on what the servers offer at run time.
//
// A server that fails to start or dies is restarted with exponential backoff (1s to 60s);
// meanwhile its commands stay listed but report themselves unavailable (Available is
// false and Execute returns an *UnavailableError).
package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// DefaultTimeout bounds starting a server and each tool call when ServerConfig.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// ServerConfig describes one MCP server. Exactly one of Command and URL is set.
type ServerConfig struct {
	// Name prefixes the server's commands (`name.tool`): lowercase letters, digits, _ and -.
	Name string
	// Command is the argv of a server spoken to over stdio. The process gets a scrubbed
	// environment (PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, TMPDIR) plus Env, so the
	// daemon's own secrets do not leak into third-party servers.
	Command []string
	// Env is added to a stdio server's environment; only valid with Command.
	Env map[string]string
	// URL is the endpoint of a server spoken to over streamable HTTP (http or https).
	URL string
	// Timeout bounds starting the server (connect, initialize, list tools) and each tool
	// call; zero means DefaultTimeout.
	Timeout time.Duration
}

var serverNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Validate reports what is wrong with the config, naming the server.
func (c ServerConfig) Validate() error {
	if c.Name == "" {
		return errors.New("mcp server: name is empty")
	}
	if !serverNameRE.MatchString(c.Name) {
		return fmt.Errorf("mcp server %q: name must be 1-32 lowercase letters, digits, _ or -, starting with a letter or digit (it prefixes command names)", c.Name)
	}
	switch {
	case len(c.Command) == 0 && c.URL == "":
		return fmt.Errorf("mcp server %q: set either command (a stdio server) or url (a streamable HTTP server)", c.Name)
	case len(c.Command) > 0 && c.URL != "":
		return fmt.Errorf("mcp server %q: command and url are both set; choose one", c.Name)
	case len(c.Command) > 0 && c.Command[0] == "":
		return fmt.Errorf("mcp server %q: command: the program name is empty", c.Name)
	case c.URL != "" && len(c.Env) > 0:
		return fmt.Errorf("mcp server %q: env applies only to command servers, not to url", c.Name)
	case c.Timeout < 0:
		return fmt.Errorf("mcp server %q: timeout %s is negative", c.Name, c.Timeout)
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil {
			return fmt.Errorf("mcp server %q: url: %v", c.Name, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("mcp server %q: url %q: want an http or https URL", c.Name, c.URL)
		}
		if u.Host == "" {
			return fmt.Errorf("mcp server %q: url %q has no host", c.Name, c.URL)
		}
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("mcp server %q: env: bad variable name %q", c.Name, k)
		}
	}
	return nil
}

func (c ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// validateAll checks every config and that names are unique.
func validateAll(cfgs []ServerConfig) error {
	seen := map[string]bool{}
	var errs []error
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("mcp server %q: configured twice", c.Name))
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}

// inheritedEnv are the variables a stdio server gets from the daemon's environment.
var inheritedEnv = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER"}

// childEnv is a stdio server's environment: the inherited basics, then the configured Env.
func childEnv(extra map[string]string) []string {
	vars := map[string]string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	for k, v := range extra {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}
