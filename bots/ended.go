package bots

import (
	"context"
	"errors"
)

// A message in a bound thread starts a follow-up task only when it was written after the
// run before it ended: after the relay's post that showed that end (the finish or failure
// note), by the platform's ordering (Adapter.Before). Feedback written for the last
// proposal and delivered after the run finished is no task. The post is recorded on the
// binding (Binding.EndPost, EndRun), so a restart keeps it.

// lateText is the note for a message written before its run's end was shown.
const lateText = "That was written while the agent was still working on its last run, so it started nothing; send it again to start a new task."

// endKey is the relay's in-memory slot (relayState.shown) for the post showing run's end.
func endKey(runID string) string { return "end\x00" + runID }

// writtenAfterEnd checks that in, a message in b's thread while its agent is idle or
// failed, was written after the post showing the end of the agent's last run, runID. It returns "" when so,
// or when that end was never shown on this platform (a stop, or a binding from before
// ends were recorded: the older checks in followUp decide); else the note to send.
func (c *check) writtenAfterEnd(ctx context.Context, runID string, b *Binding) (string, error) {
	end := ""
	if b.EndRun != "" && b.EndRun == runID {
		end = b.EndPost
	}
	if end == "" && runID != "" {
		var err error
		if end, err = c.endShown(ctx, c.ep.a.Platform(), runID); err != nil {
			return "", err
		}
	}
	if end == "" || c.in.ID != "" && c.ep.a.Before(end, c.in.ID) {
		return "", nil
	}
	return lateText, nil
}

var errEndNotShown = errors.New("the end of the agent's last run is still being posted in this thread, so that started nothing; send it again in a moment")

// endShown is the post showing run's end on platform when the relay made it in this
// process; "" when it made none. A post in flight is waited for, up to shownWait; one that
// does not come in time is an error, so nothing starts on a guess.
func (c *check) endShown(ctx context.Context, platform, runID string) (string, error) {
	if !c.r.board.posting(endKey(runID)) {
		return "", nil
	}
	if msg, ok := c.r.board.awaitShown(ctx, endKey(runID), platform, shownWait); ok {
		return msg, nil
	}
	return "", errEndNotShown
}
