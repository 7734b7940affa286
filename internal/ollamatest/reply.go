package ollamatest

import (
	"encoding/json"

	"github.com/agentd/agentd/api"
)

// Reply is a schema-valid model reply proposing name(args), with short stand-in
// thoughts: reasoning "because NAME" and speak "I will NAME". Args may be any value
// that marshals to a JSON object, or a json.RawMessage.
func Reply(name string, args any) string {
	return ReplyThinking(name, args, api.Thoughts{Observations: "o", Text: "t", Reasoning: "because " + name,
		SelfCriticism: "s", Plan: "p", Speak: "I will " + name})
}

// ReplyThinking is a model reply proposing name(args) with the thoughts th.
func ReplyThinking(name string, args any, th api.Thoughts) string {
	b, err := json.Marshal(map[string]any{"thoughts": th, "command": map[string]any{"name": name, "args": args}})
	if err != nil {
		panic("ollamatest: reply args do not marshal: " + err.Error())
	}
	return string(b)
}
