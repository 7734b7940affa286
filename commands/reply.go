package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Thoughts is the reasoning part of every model reply.
type Thoughts struct {
	Observations  string `json:"observations" desc:"what you notice about the last result" max:"200"`
	Text          string `json:"text" desc:"your thoughts" max:"200"`
	Reasoning     string `json:"reasoning" desc:"why this command" max:"200"`
	SelfCriticism string `json:"self_criticism" desc:"constructive self-criticism" max:"150"`
	Plan          string `json:"plan" desc:"short bulleted plan" max:"200"`
	Speak         string `json:"speak" desc:"one sentence for the person following you" max:"150"`
}

// Reply is a model reply after parsing: its thoughts and exactly one command.
type Reply struct {
	Thoughts Thoughts `json:"thoughts"`
	Command  Call     `json:"command"`
}

// Call is one proposed command with its arguments.
type Call struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ThoughtsSchema is the schema of the thoughts object.
var ThoughtsSchema = FromStruct(Thoughts{})

// ReplySchema is the JSON Schema every reply must match: thoughts first, then a command that
// is one of set, each alternative pairing a name with that command's own params.
func ReplySchema(set Set) *Schema {
	var alts []*Schema
	for _, c := range set {
		s := c.Spec()
		alts = append(alts, Object(
			Prop{"name", &Schema{Type: "string", Enum: []string{s.Name}}},
			Prop{"args", s.Params},
		))
	}
	cmd := &Schema{AnyOf: alts}
	if len(alts) == 1 {
		cmd = alts[0]
	}
	return Object(Prop{"thoughts", ThoughtsSchema}, Prop{"command", cmd})
}

// ParseReply decodes a model reply and checks it against set. Errors are *ValidationError
// with problems phrased for the model, so they can be fed back to it for a retry.
// Only the first JSON value counts: text after it (a trailing remark, a second object) is
// ignored, as the repair path's "take the first JSON object" would do anyway.
func ParseReply(set Set, data []byte) (*Reply, error) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, &ValidationError{Problems: []string{"reply is not valid JSON: " + err.Error()}}
	}
	top := Object(Prop{"thoughts", ThoughtsSchema}, Prop{"command", &Schema{Type: "object"}})
	if err := top.Validate(raw); err != nil {
		return nil, err
	}
	m := raw.(map[string]any)
	cmd := m["command"].(map[string]any)
	name, _ := cmd["name"].(string)
	c, ok := set.Get(name)
	if !ok {
		names := set.Names()
		sort.Strings(names)
		if name == "" {
			return nil, &ValidationError{Problems: []string{"$.command.name: missing; choose one of: " + strings.Join(names, ", ")}}
		}
		return nil, &ValidationError{Problems: []string{fmt.Sprintf("$.command.name: unknown command %q; choose one of: %s", name, strings.Join(names, ", "))}}
	}
	for k := range cmd {
		if k != "name" && k != "args" {
			return nil, &ValidationError{Problems: []string{fmt.Sprintf("$.command: unexpected property %q (allowed: name, args)", k)}}
		}
	}
	args, present := cmd["args"]
	if !present {
		args = map[string]any{}
	}
	var probs []string
	c.Spec().Params.validate("$.command.args", args, &probs)
	if len(probs) > 0 {
		want, _ := json.Marshal(c.Spec().Params)
		probs = append(probs, fmt.Sprintf("expected args for %s: %s", name, want))
		return nil, &ValidationError{Problems: probs}
	}
	var r Reply
	if err := json.Unmarshal(data[:dec.InputOffset()], &r); err != nil {
		return nil, &ValidationError{Problems: []string{err.Error()}}
	}
	if len(r.Command.Args) == 0 || string(r.Command.Args) == "null" {
		r.Command.Args = json.RawMessage("{}")
	}
	return &r, nil
}

// CanonicalArgs re-encodes args with sorted keys and no insignificant space, so that equal
// arguments hash equally whatever order or spacing the model used.
// Numbers keep their text, so two large integers that differ only past float64 precision
// do not hash alike.
func CanonicalArgs(args json.RawMessage) (json.RawMessage, error) {
	var v any
	if len(args) == 0 {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("args: unexpected data after the JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)              // keep <, > and & readable in prompts and proposals
	if err := enc.Encode(v); err != nil { // encoding/json sorts map keys
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}
