package agent

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/ollamatest"
)

func TestTinyModelNameMatchesHarness(t *testing.T) {
	if tinyModelName != ollamatest.TinyModelName {
		t.Fatalf("tinyModelName = %q, ollamatest.TinyModelName = %q: doctor would not recognise the test model", tinyModelName, ollamatest.TinyModelName)
	}
}

// Doctor warns when the configured model is the offline tiny model: it answers noise.
func TestModelCheckWarnsOnTinyModel(t *testing.T) {
	tests := []struct {
		name   string
		info   llm.ModelInfo
		status string
		noise  bool
	}{
		{"tiny_model_warns", llm.ModelInfo{Model: "agentd-tiny", ContextLength: 8192}, api.CheckWarn, true},
		{"tiny_model_tagged_warns", llm.ModelInfo{Model: "agentd-tiny:latest", ContextLength: 8192}, api.CheckWarn, true},
		{"tiny_model_short_context_says_noise", llm.ModelInfo{Model: "agentd-tiny", ContextLength: 256}, api.CheckWarn, true},
		{"real_model_ok", llm.ModelInfo{Model: "qwen3:8b", ContextLength: 8192}, api.CheckOK, false},
		{"similar_name_ok", llm.ModelInfo{Model: "agentd-tiny-real", ContextLength: 8192}, api.CheckOK, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := modelCheck(&tt.info, 0)
			if c.Status != tt.status {
				t.Errorf("status = %s, want %s (%+v)", c.Status, tt.status, c)
			}
			if got := strings.Contains(c.Detail, "noise"); got != tt.noise {
				t.Errorf("detail %q: mentions noise = %v, want %v", c.Detail, got, tt.noise)
			}
			// The model it suggests is the one run.sh and the README use.
			if tt.noise && (!strings.Contains(c.Fix, "[ollama] model") || !strings.Contains(c.Fix, "ollama pull "+config.DefaultModel)) {
				t.Errorf("fix %q does not name [ollama] model and ollama pull %s", c.Fix, config.DefaultModel)
			}
		})
	}
}
