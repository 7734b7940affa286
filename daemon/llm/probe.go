package llm

import (
	"context"
	"strconv"
	"strings"

	ollama "github.com/ollama/ollama/api"
)

// ModelInfo is what the daemon learns about the server and the model at start.
type ModelInfo struct {
	ServerVersion string
	Model         string
	// ContextLength is the most context the daemon should ask for (num_ctx): the length the
	// model was trained for, lowered to the Modelfile's num_ctx when it sets one, since whoever
	// wrote `PARAMETER num_ctx` chose it for a reason (usually memory). 0 when neither is known.
	// Callers still cap it with their own configured maximum and pass num_ctx on every call,
	// because Ollama's default num_ctx is far below most models' trained length.
	ContextLength int
	// TrainedContextLength is model_info's "<architecture>.context_length"; 0 if absent.
	TrainedContextLength int
	// ModelfileNumCtx is the model's `PARAMETER num_ctx`; 0 if unset.
	ModelfileNumCtx int
	// Capabilities as the server reports them: completion, tools, thinking, vision, embedding, …
	Capabilities []string
	// Family is the model family (e.g. "llama"), or its architecture when the server gives none.
	Family string
}

// Probe asks the server for its version (/api/version) and about model (/api/show).
// Errors are classified like Chat's: ErrUnavailable, *ModelNotFoundError, *StatusError.
// A pool's client asks a host that is up and has the model.
func (c *Client) Probe(ctx context.Context, model string) (*ModelInfo, error) {
	if c.pool != nil {
		return withHost(ctx, c.pool, "show", model, func(h *Client) (*ModelInfo, error) { return c.probeAt(ctx, h, model) })
	}
	return c.probeAt(ctx, c, model)
}

// probeAt is Probe on host h: c itself, or one host of c's pool.
func (c *Client) probeAt(ctx context.Context, h *Client, model string) (*ModelInfo, error) {
	v, err := h.api.Version(ctx)
	if err != nil {
		return nil, h.classify(ctx, "version", model, err)
	}
	show, err := h.api.Show(ctx, &ollama.ShowRequest{Model: model})
	if err != nil {
		return nil, h.classify(ctx, "show", model, err)
	}
	info := modelInfo(v, model, show)
	c.probedModel(model, info.ContextLength)
	return info, nil
}

func modelInfo(version, model string, show *ollama.ShowResponse) *ModelInfo {
	info := &ModelInfo{ServerVersion: version, Model: model, Family: show.Details.Family}
	for _, c := range show.Capabilities {
		info.Capabilities = append(info.Capabilities, string(c))
	}
	arch, _ := show.ModelInfo["general.architecture"].(string)
	if info.Family == "" {
		info.Family = arch
	}
	info.TrainedContextLength = contextLength(show.ModelInfo, arch)
	info.ModelfileNumCtx = parameterInt(show.Parameters, "num_ctx")
	info.ContextLength = minPositive(info.TrainedContextLength, info.ModelfileNumCtx)
	return info
}

// contextLength reads "<arch>.context_length"; without a known architecture it takes the
// only "*.context_length" key there is, if there is exactly one.
func contextLength(mi map[string]any, arch string) int {
	if arch != "" {
		return positiveInt(mi[arch+".context_length"])
	}
	found := 0
	for k, v := range mi {
		if strings.HasSuffix(k, ".context_length") {
			if found != 0 {
				return 0
			}
			found = positiveInt(v)
		}
	}
	return found
}

func positiveInt(v any) int {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case string:
		f, _ = strconv.ParseFloat(n, 64)
	}
	if f < 1 || f > 1<<40 {
		return 0
	}
	return int(f)
}

// parameterInt finds key in /api/show's parameters text, which has one
// "name<spaces>value" line per Modelfile PARAMETER.
func parameterInt(params, key string) int {
	for _, line := range strings.Split(params, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, err := strconv.Atoi(strings.Trim(f[1], `"`))
			if err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

func minPositive(a, b int) int {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}
