package commands

import (
	"context"
	"fmt"
)

// The built-in components. The daemon assembles each agent from these and its own
// (history, memory) in the order config declares; see the daemon's agent package.

// StaticDirectives provides fixed directives: the base ones from config.
type StaticDirectives struct {
	ID string // the component's name
	D  Directives
}

// Name implements Component.
func (c StaticDirectives) Name() string { return c.ID }

// Directives implements DirectiveProvider.
func (c StaticDirectives) Directives(context.Context, *Step) (Directives, error) { return c.D, nil }

// ProfileDirectives provides the agent's own directives, written when its profile was.
type ProfileDirectives struct{}

// Name implements Component.
func (ProfileDirectives) Name() string { return "profile" }

// Directives implements DirectiveProvider.
func (ProfileDirectives) Directives(_ context.Context, s *Step) (Directives, error) {
	return s.Directives, nil
}

// CommandList offers a fixed list of commands.
type CommandList struct {
	ID   string
	Cmds Set
}

// Name implements Component.
func (c CommandList) Name() string { return c.ID }

// Commands implements CommandProvider.
func (c CommandList) Commands(context.Context, *Step) ([]Command, error) { return c.Cmds, nil }

// CommandFunc offers the commands a function returns at each step: tools that come and go,
// such as an MCP server's, which are not offered while their server is down.
type CommandFunc struct {
	ID string
	F  func() []Command
}

// Name implements Component.
func (c CommandFunc) Name() string { return c.ID }

// Commands implements CommandProvider.
func (c CommandFunc) Commands(context.Context, *Step) ([]Command, error) { return c.F(), nil }

// Clock tells the model the current time.
type Clock struct{}

// Name implements Component.
func (Clock) Name() string { return "clock" }

// Messages implements MessageProvider.
func (Clock) Messages(_ context.Context, s *Step) ([]string, error) {
	if s.Now.IsZero() {
		return nil, nil
	}
	return []string{fmt.Sprintf("The current time is %s.", s.Now.UTC().Format("2006-01-02 15:04 MST"))}, nil
}

var (
	_ DirectiveProvider = StaticDirectives{}
	_ DirectiveProvider = ProfileDirectives{}
	_ CommandProvider   = CommandList{}
	_ CommandProvider   = CommandFunc{}
	_ MessageProvider   = Clock{}
)
