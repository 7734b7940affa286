package llm

import (
	"context"
	"fmt"

	ollama "github.com/ollama/ollama/api"
)

// Embed returns one vector per text, computed by model through Ollama's /api/embed.
// Errors are classified like a chat call's (ErrUnavailable, *ModelNotFoundError).
func (c *Client) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	req := &ollama.EmbedRequest{Model: model, Input: texts}
	// The model's one Load, as for chat: an embedding never reloads it.
	if ld, managed, err := c.requestLoad(ctx, model); err != nil {
		return nil, err
	} else if managed {
		if ld.NumCtx > 0 {
			req.Options = map[string]any{"num_ctx": ld.NumCtx}
		}
		if ld.KeepAlive != nil {
			req.KeepAlive = &ollama.Duration{Duration: *ld.KeepAlive}
		}
	}
	if c.pool != nil { // not queued: embeddings are short and use their own model
		return withHost(ctx, c.pool, "embed", model, func(h *Client) ([][]float32, error) { return h.embed(ctx, req, len(texts)) })
	}
	return c.embed(ctx, req, len(texts))
}

// embed sends req (n texts, its Load already chosen) to this client's server.
func (c *Client) embed(ctx context.Context, req *ollama.EmbedRequest, n int) ([][]float32, error) {
	resp, err := c.api.Embed(ctx, req)
	if err != nil {
		return nil, c.classify(ctx, "embed", req.Model, err)
	}
	if len(resp.Embeddings) != n {
		return nil, fmt.Errorf("llm: embed: %s returned %d vectors for %d texts", req.Model, len(resp.Embeddings), n)
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
