package api

import "context"

// PolicyClient reaches an agent's permission patterns: c.Policy().Add(ctx, agent, req).
type PolicyClient struct{ c *Client }

// Policy returns the client for permission patterns, over c's transport.
func (c *Client) Policy() PolicyClient { return PolicyClient{c} }

// Get returns every permission pattern that applies to the agent.
func (p PolicyClient) Get(ctx context.Context, agent string) (*PolicyView, error) {
	return PolicyRoute.Do(ctx, p.c, agent, None{})
}

// Add stores an allow or deny pattern for the agent.
func (p PolicyClient) Add(ctx context.Context, agent string, req PermissionRequest) (*PolicyView, error) {
	return AddPermissionRoute.Do(ctx, p.c, agent, req)
}

// Remove deletes a stored pattern of the agent.
func (p PolicyClient) Remove(ctx context.Context, agent string, req PermissionRequest) (*PolicyView, error) {
	return RemovePermissionRoute.Do(ctx, p.c, agent, req)
}

// Test says how the agent's permission patterns would decide a proposal, and why.
func (p PolicyClient) Test(ctx context.Context, agent string, req PolicyTestRequest) (*PolicyTest, error) {
	return TestPolicyRoute.Do(ctx, p.c, agent, req)
}

// GrantClient reaches an agent's grants (y -N, y!, pattern grants): c.Grants().List(ctx, agent).
type GrantClient struct{ c *Client }

// Grants returns the client for grants, over c's transport.
func (c *Client) Grants() GrantClient { return GrantClient{c} }

// List lists the agent's grants, newest first.
func (g GrantClient) List(ctx context.Context, agent string) (*GrantList, error) {
	return GrantsRoute.Do(ctx, g.c, agent, None{})
}

// Add previews a pattern grant for the agent and, unless req.DryRun, stores it.
func (g GrantClient) Add(ctx context.Context, agent string, req GrantRequest) (*GrantPreview, error) {
	return AddGrantRoute.Do(ctx, g.c, agent, req)
}

// Revoke revokes one of the agent's grants: it approves nothing from then on.
func (g GrantClient) Revoke(ctx context.Context, agent string, req RevokeRequest) (*Grant, error) {
	return RevokeGrantRoute.Do(ctx, g.c, agent, req)
}
