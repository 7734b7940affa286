package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentd/agentd/commands"
)

// Proposal is the model's answer to one step: a parsed reply naming exactly one command of
// the set, and what it cost.
type Proposal struct {
	Reply *commands.Reply // nil when an error is returned
	Raw   string          // the accepted reply as the model wrote it (before any repair)
	// PromptTokens and EvalTokens are summed over every call, the retry included.
	PromptTokens int
	EvalTokens   int
	Calls        int  // 1, or 2 when the first reply was invalid
	Repaired     bool // the accepted reply needed Repair (fences, prose, trailing commas)
	Retried      bool // the first reply was invalid and the model was asked again
}

// Generation is what a Generate call cost; the fields mean what Proposal's do.
type Generation struct {
	Raw          string
	PromptTokens int
	EvalTokens   int
	Calls        int
	Repaired     bool
	Retried      bool
}

// InvalidReplyError says the model answered twice — the first try and the one retry that
// fed its problems back — with something that does not match the schema even after Repair.
// The agent counts it as a strike.
type InvalidReplyError struct {
	Problems []string // what was wrong with the last reply, path by path
	Raw      string   // the last reply as the model wrote it
}

func (e *InvalidReplyError) Error() string {
	return "invalid model reply after one retry: " + strings.Join(e.Problems, "; ")
}

// Unwrap returns the last reply's problems as a *commands.ValidationError.
func (e *InvalidReplyError) Unwrap() error { return &commands.ValidationError{Problems: e.Problems} }

// Propose asks the model for the next command. It sets req.Format to the reply schema of
// set, parses the reply with commands.ParseReply, falls back to Repair, and when the reply
// is still invalid asks once more with the problems spelled out.
//
// Errors: *InvalidReplyError when both replies were invalid; Chat's errors (ErrUnavailable,
// *ModelNotFoundError, a context error, …) as they are. With those errors the returned
// Proposal is still non-nil, with a nil Reply, so the calls and tokens spent can be counted.
func Propose(ctx context.Context, c *Client, req ChatRequest, set commands.Set) (*Proposal, error) {
	if len(set) == 0 {
		return nil, errors.New("llm: propose: the command set is empty")
	}
	format, err := json.Marshal(commands.ReplySchema(set))
	if err != nil {
		return nil, fmt.Errorf("llm: propose: reply schema: %w", err)
	}
	req.Format = format
	var reply *commands.Reply
	g, err := structured(ctx, c, req, func(data []byte) error {
		r, err := commands.ParseReply(set, data)
		reply = r
		return err
	})
	p := &Proposal{
		Raw: g.Raw, PromptTokens: g.PromptTokens, EvalTokens: g.EvalTokens,
		Calls: g.Calls, Repaired: g.Repaired, Retried: g.Retried,
	}
	if err != nil {
		return p, err
	}
	p.Reply = reply
	return p, nil
}

// Generate is Propose for any schema: the same constrained call, repair and single retry,
// with the accepted reply decoded into out (a non-nil pointer, left untouched on error).
// It serves structured calls other than proposals, such as writing an agent's profile.
// Like Propose it returns a non-nil *Generation with the tokens spent even on an error.
func Generate(ctx context.Context, c *Client, req ChatRequest, schema *commands.Schema, out any) (*Generation, error) {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("llm: generate: out must be a non-nil pointer, got %T", out)
	}
	if schema == nil {
		return nil, errors.New("llm: generate: nil schema")
	}
	format, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("llm: generate: schema: %w", err)
	}
	req.Format = format
	fresh := reflect.New(rv.Type().Elem())
	g, err := structured(ctx, c, req, func(data []byte) error {
		fresh.Elem().SetZero()
		return decodeValid(schema, data, fresh.Interface())
	})
	if err == nil {
		rv.Elem().Set(fresh.Elem())
	}
	return g, err
}

// decodeValid decodes the first JSON value of data into out once it validates against schema.
func decodeValid(schema *commands.Schema, data []byte, out any) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return &commands.ValidationError{Problems: []string{"reply is not valid JSON: " + err.Error()}}
	}
	if err := schema.Validate(v); err != nil {
		return err
	}
	if err := json.Unmarshal(data[:dec.InputOffset()], out); err != nil {
		return &commands.ValidationError{Problems: []string{"$: " + err.Error()}}
	}
	return nil
}

// structured runs the call-check-repair-retry cycle shared by Propose and Generate.
// accept parses and validates one candidate reply, keeping the result on success.
func structured(ctx context.Context, c *Client, req ChatRequest, accept func([]byte) error) (*Generation, error) {
	g := &Generation{}
	base := req.Messages[:len(req.Messages):len(req.Messages)] // appends must not touch the caller's slice
	var problems []string
	for try := 0; try < 2; try++ {
		if try == 1 {
			g.Retried = true
			req.Messages = append(base,
				Message{Role: "assistant", Content: g.Raw},
				Message{Role: "user", Content: retryPrompt(problems)})
		}
		res, err := c.Chat(ctx, req)
		if err != nil {
			return g, err
		}
		g.Calls++
		g.PromptTokens += res.PromptTokens
		g.EvalTokens += res.EvalTokens
		g.Raw = res.Content
		repaired, err := check(res.Content, accept)
		if err == nil {
			g.Repaired = repaired
			return g, nil
		}
		problems = problemsOf(err)
		if res.DoneReason == "length" {
			cut := fmt.Sprintf("the reply was cut off after %d tokens: keep every string short", res.EvalTokens)
			problems = append([]string{cut}, problems...)
		}
	}
	return g, &InvalidReplyError{Problems: problems, Raw: g.Raw}
}

// retryPrompt is the user message that feeds an invalid reply's problems back to the model.
func retryPrompt(problems []string) string {
	return "Your reply was invalid: " + strings.Join(problems, "; ") +
		". Reply again with a single JSON object that matches the schema."
}

// check accepts content as it is or, failing that, as Repair rewrites it. When a repaired
// candidate exists its problems are returned: they are about what the model meant to send,
// not about the fences or prose around it.
func check(content string, accept func([]byte) error) (repaired bool, err error) {
	err = accept([]byte(content))
	if err == nil {
		return false, nil
	}
	fixed, ok := Repair(content)
	if !ok || fixed == strings.TrimSpace(content) {
		return false, err
	}
	if err := accept([]byte(fixed)); err != nil {
		return false, err
	}
	return true, nil
}

func problemsOf(err error) []string {
	var ve *commands.ValidationError
	if errors.As(err, &ve) && len(ve.Problems) > 0 {
		return ve.Problems
	}
	return []string{err.Error()}
}
