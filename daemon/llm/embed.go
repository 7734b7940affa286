package llm

import (
	"context"
	"fmt"

	"github.com/ollama/ollama/api"
)

// Embed returns one vector per text, computed by model through Ollama's /api/embed.
// Errors are classified like a chat call's (ErrUnavailable, *ModelNotFoundError).
func (c *Client) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if c.pool != nil && len(texts) > 0 { // not queued: embeddings are short and use their own model
		return withHost(ctx, c.pool, "embed", model, func(h *Client) ([][]float32, error) { return h.Embed(ctx, model, texts) })
	}
	if len(texts) == 0 {
		return nil, nil
	}
	req := &api.EmbedRequest{Model: model, Input: texts}
	if c.loads.isManaged() { // the model's one Load, as for chat: an embedding never reloads it
		ld, err := c.LoadFor(ctx, model)
		if err != nil {
			return nil, err
		}
		if ld.NumCtx > 0 {
			req.Options = map[string]any{"num_ctx": ld.NumCtx}
		}
		if ld.KeepAlive != nil {
			req.KeepAlive = &api.Duration{Duration: *ld.KeepAlive}
		}
	}
	resp, err := c.api.Embed(ctx, req)
	if err != nil {
		return nil, c.classify(ctx, "embed", model, err)
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, fmt.Errorf("llm: embed: %s returned %d vectors for %d texts", model, len(resp.Embeddings), len(texts))
	}
	return resp.Embeddings, nil
}

// Embedder embeds with one model; it is the memory index's Embedder (hybrid search).
type Embedder struct {
	Client *Client
	Model  string
}

// Embed implements memory.Embedder.
func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.Client.Embed(ctx, e.Model, texts)
}
