package chattest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
)

// TouchCommand is the name of touch, a test command: every start is sent on Touched, so
// tests and benchmarks see the moment a command starts; touching "big" prints 400 lines.
const TouchCommand = "bots_test_touch"

// EchoCommand is the name of echo, a test command whose five arguments (EchoParams)
// take 2,000 characters each (the most Ollama's grammar bounds a string to): a proposal
// of 10,000 characters.
const EchoCommand = "bots_test_echo"

// EchoParams are echo's arguments.
var EchoParams = []string{"a", "b", "c", "d", "e"}

// Touched carries what each touch was of, as it starts.
var Touched = make(chan string, 1024)

type touch struct{}

func (touch) Spec() commands.Spec {
	return commands.Spec{Name: TouchCommand, Description: "touch something",
		Params: commands.Object(commands.Prop{Name: "what", Schema: commands.String("what", 40)}), Class: commands.ClassWriteWorkspace}
}

func (touch) Execute(ctx context.Context, env commands.Env, args json.RawMessage) (string, error) {
	var a struct{ What string }
	json.Unmarshal(args, &a)
	select {
	case Touched <- a.What:
	default:
	}
	if a.What == "big" {
		return strings.Repeat("a long line of output\n", 400), nil
	}
	return "touched " + a.What, nil
}

type echo struct{}

func (echo) Spec() commands.Spec {
	var props []commands.Prop
	for _, n := range EchoParams {
		props = append(props, commands.Prop{Name: n, Schema: commands.String(n, commands.MaxGrammarRepetitions)})
	}
	return commands.Spec{Name: EchoCommand, Description: "echo long text", Params: commands.Object(props...), Class: commands.ClassWriteWorkspace}
}

func (echo) Execute(context.Context, commands.Env, json.RawMessage) (string, error) {
	return "echoed", nil
}

func init() {
	commands.Register(touch{})
	commands.Register(echo{})
}

// Drain forgets the touches so far.
func Drain() {
	for {
		select {
		case <-Touched:
		default:
			return
		}
	}
}

// TouchedInOrder checks that the next touches are of whats, in order.
func TouchedInOrder(t testing.TB, whats ...string) {
	t.Helper()
	for _, w := range whats {
		select {
		case got := <-Touched:
			if got != w {
				t.Errorf("touched %q, want %q", got, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("command %s never started", w)
		}
	}
}

// NoCommandRan checks that no touch started since the last one read.
func NoCommandRan(t testing.TB) {
	t.Helper()
	select {
	case w := <-Touched:
		t.Errorf("a command ran: %s", w)
	default:
	}
}

// HostileArg is 2,000 characters that grow when escaped for either platform and break
// naive cuts.
func HostileArg(i int) string {
	s := strings.Repeat(fmt.Sprintf("&<>&<>&<>`*_%d ```&amp; ", i), 200)
	return s[:commands.MaxGrammarRepetitions]
}
