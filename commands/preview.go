package commands

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/api"
)

// Previewer is a command that can say what it would do before it runs: the daemon asks
// when the proposal is made and stores the answer with it, so the person deciding sees
// the effect (a diff, the programs, the host) and not only the model's args.
//
// Preview must not change anything, must go through the same guards as Execute (the
// workspace resolver, the shell parser, the network guard) so that it shows what Execute
// would do, and returns nil when it has nothing to add. Args are the proposal's canonical
// args, not yet checked against the schema.
type Previewer interface {
	Preview(ctx context.Context, env Env, args json.RawMessage) *api.Preview
}

// Preview returns c's preview of args, or nil when c has none. A panicking previewer
// gives a note instead of taking the proposal down: the preview is help, not a gate.
func Preview(ctx context.Context, c Command, env Env, args json.RawMessage) (p *api.Preview) {
	pv, ok := c.(Previewer)
	if !ok {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			p = &api.Preview{Kind: "", Note: fmt.Sprintf("no preview: working it out failed (%v); judge the args", r)}
		}
	}()
	return pv.Preview(ctx, env, args)
}

// EffectPreviewer is a command the daemon can run ahead, on a copy of the workspace with
// the network off, to show a person the change it makes before they approve it
// (execute_shell, execute_python_file). EffectPreview returns "" when it can, else why
// not, for the person: no sandbox confines it, or it is granted the network a preview
// would take away.
type EffectPreviewer interface {
	EffectPreview() string
	// RunAheadMemory is the memory limit of the box the command runs in (bytes): what a
	// run ahead's writes may take where they are kept in memory no cgroup charges to it.
	RunAheadMemory() int64
}
