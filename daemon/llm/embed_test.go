package llm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/ollamatest"
)

func TestEmbed(t *testing.T) {
	fake := ollamatest.NewFake(t)
	fake.SetModels(ollamatest.TinyModelName, "embedder")
	c, err := llm.New(fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := llm.Embedder{Client: c, Model: "embedder"}
	vecs, err := e.Embed(ctx, []string{"the launch code", "a garden"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) != ollamatest.EmbedDims {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}
	if want := ollamatest.FakeEmbedding("a garden"); vecs[1][0] != want[0] || vecs[1][5] != want[5] {
		t.Errorf("vectors out of order")
	}
	_, err = c.Embed(ctx, "missing", []string{"x"})
	var nf *llm.ModelNotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("embedding with a missing model: %v, want *ModelNotFoundError", err)
	}
	fake.SetDown(true)
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("embedding with the server down: %v, want ErrUnavailable", err)
	}
}
