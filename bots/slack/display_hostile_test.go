package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
)

// Every hostile string a message carries reaches Slack escaped, none raw: in its
// blocks, as Slack shows each line, and in its summary.
func TestMessagesEscapeEveryHostileCharacter(t *testing.T) {
	chattest.CheckHostileEscaped(t, Platform, "U1", func(m bots.Message) string {
		js, _ := json.Marshal(Blocks(m))
		return strings.Join(blockStrings(js), "\n") + "\n" + escape(m.Summary)
	})
}

// blockStrings are the strings of encoded blocks, each line as Slack shows it.
func blockStrings(js []byte) []string {
	var v any
	json.Unmarshal(js, &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
