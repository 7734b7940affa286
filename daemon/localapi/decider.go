package localapi

import (
	"context"
	"os/user"
	"strconv"
	"strings"
	"sync"

	"github.com/agentd/agentd/api"
)

// stampDecider records who sent a decision or an answer, as the kernel says: the socket
// peer's uid (any uid the body carried is replaced), and for a request that names no
// one, or only a uid ("uid 0" from a shell without $USER), that user's name, so people
// read "root" or "ana" where they read "uid 0". A name the request gives is kept: a
// front end speaking for someone else names them.
func stampDecider(ctx context.Context, v any) {
	peer, known := PeerFrom(ctx)
	var uid *uint32
	if known {
		u := peer.UID
		uid = &u
	}
	fill := func(by *string, to **uint32) {
		*to = uid
		if uid != nil && (*by == "" || strings.HasPrefix(*by, "uid ")) {
			*by = userName(*uid)
		}
	}
	switch req := v.(type) {
	case *api.DecideRequest:
		fill(&req.By, &req.UID)
	case *api.AnswerRequest:
		fill(&req.By, &req.UID)
	}
}

// userNames caches uid → name lookups: the password database does not change often,
// and a decision should not wait on it twice.
var userNames sync.Map

// userName is the login name of uid, or "uid N" when the system does not know it.
func userName(uid uint32) string {
	if n, ok := userNames.Load(uid); ok {
		return n.(string)
	}
	name := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		name = u.Username
	}
	userNames.Store(uid, name)
	return name
}
