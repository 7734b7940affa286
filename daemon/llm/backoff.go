package llm

import (
	"time"

	"github.com/agentd/agentd/internal/backoff"
)

// modelBackoff is the wait while the model server is unavailable: 1s, 2s, 4s, … 30s
// with ±20% jitter.
var modelBackoff = backoff.Policy{Base: time.Second, Max: 30 * time.Second, Jitter: 0.2}

// NextBackoff returns the wait before retry attempt n (n ≥ 1; smaller n counts as 1)
// while the model server is unavailable.
func NextBackoff(attempt int) time.Duration { return modelBackoff.Next(attempt) }
