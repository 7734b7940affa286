package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/display"
)

// UnavailableError is what a tool's command returns while its server is down; the bridge
// is restarting the server, so the same call may work later.
type UnavailableError struct {
	Server string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("mcp server %q is unavailable (restarting)", e.Server)
}

// maxErrorText bounds the part of an error that comes from the server.
const maxErrorText = 2000

// toolCommand is one tool of one server, as an agentd command.
type toolCommand struct {
	srv  *server
	tool string // the server's name for it, which the command name may have changed
	spec commands.Spec
}

var _ commands.Command = (*toolCommand)(nil)

func (c *toolCommand) Spec() commands.Spec { return c.spec }

// Available reports whether the tool's server is connected now. The daemon may leave an
// unavailable command out of the prompt; Execute would fail with an *UnavailableError.
func (c *toolCommand) Available() bool { return c.srv.current() != nil }

// Execute calls the tool with args, already validated against the converted params, and
// returns its text content. A result flagged isError becomes an error carrying that text.
func (c *toolCommand) Execute(ctx context.Context, _ commands.Env, args json.RawMessage) (string, error) {
	sess := c.srv.current()
	if sess == nil {
		return "", &UnavailableError{Server: c.srv.cfg.Name}
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	callCtx, cancel := context.WithTimeout(ctx, c.srv.cfg.timeout())
	defer cancel()
	res, err := sess.CallTool(callCtx, &mcp.CallToolParams{Name: c.tool, Arguments: args})
	if err != nil {
		return "", c.callError(ctx, callCtx, err)
	}
	out := render(res)
	if res.IsError {
		if strings.TrimSpace(out) == "" {
			out = "no details given"
		}
		return "", fmt.Errorf("%s: the tool reported an error: %s", c.spec.Name, display.Cut(out, maxErrorText, display.Ellipsis))
	}
	return out, nil
}

// callError says what went wrong with a call in words the model can act on.
func (c *toolCommand) callError(ctx, callCtx context.Context, err error) error {
	name, srv := c.spec.Name, c.srv.cfg.Name
	switch {
	case ctx.Err() != nil:
		// The caller's deadline or cancellation; commands.Run says which.
		return fmt.Errorf("%s: the call to mcp server %q was cut short: %w", name, srv, ctx.Err())
	case callCtx.Err() != nil:
		return fmt.Errorf("%s: mcp server %q did not answer within %s: %w", name, srv, c.srv.cfg.timeout(), callCtx.Err())
	}
	if rpcErr := serverAnswer(err); rpcErr != nil {
		return fmt.Errorf("%s: mcp server %q refused the call: %s", name, srv, display.Cut(rpcErr.Message, maxErrorText, display.Ellipsis))
	}
	c.srv.check()
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return fmt.Errorf("%s: lost the connection to mcp server %q; it is being restarted, so try again later or use another command", name, srv)
	}
	return fmt.Errorf("%s: could not reach mcp server %q (%s); it is restarted if it is down, so try again later or use another command", name, srv, display.Cut(err.Error(), maxErrorText, display.Ellipsis))
}

// codeRejected is the go-sdk's code for a request that never reached the server (its
// internal jsonrpc2.ErrRejected): the HTTP transport reports a refused connection with it.
const codeRejected = -32005

// serverAnswer returns the JSON-RPC error the server itself sent, or nil when err came
// from the transport instead.
func serverAnswer(err error) *jsonrpc.Error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code != codeRejected {
		return rpcErr
	}
	return nil
}

// render joins a result's content as text. Text parts are kept as they are; other parts
// are summarized, since the model reads text only. Structured content stands in when
// there is no content at all.
func render(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *mcp.EmbeddedResource:
			parts = append(parts, renderResource(c.Resource))
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func renderResource(r *mcp.ResourceContents) string {
	switch {
	case r == nil:
		return "[resource: empty]"
	case r.Text != "":
		return fmt.Sprintf("[resource: %s]\n%s", r.URI, r.Text)
	}
	return fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
