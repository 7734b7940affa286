package client

import (
	"errors"
	"net/http"
	"testing"
)

func TestParseDecision(t *testing.T) {
	cases := []struct {
		name, in string
		want     DecideRequest
		wantErr  bool
	}{
		{"y", "y", DecideRequest{Kind: DecisionApprove, Count: 1}, false},
		{"yes_upper", " YES ", DecideRequest{Kind: DecisionApprove, Count: 1}, false},
		{"y_count", "y -3", DecideRequest{Kind: DecisionApprove, Count: 3}, false},
		{"y_count_spaces", "  y   -12 ", DecideRequest{Kind: DecisionApprove, Count: 12}, false},
		{"n", "n", DecideRequest{Kind: DecisionDeny}, false},
		{"no", "No", DecideRequest{Kind: DecisionDeny}, false},
		{"feedback", "try the other file", DecideRequest{Kind: DecisionFeedback, Feedback: "try the other file"}, false},
		{"y_word_is_feedback", "y not", DecideRequest{Kind: DecisionFeedback, Feedback: "y not"}, false},
		{"y_zero", "y -0", DecideRequest{}, true},
		{"y_garbage", "y -x", DecideRequest{}, true},
		{"empty", "   ", DecideRequest{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseDecision(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, c.wantErr)
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	err := Errorf(ErrConflict, "proposal %s was already decided", "p-1")
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || err.Error() != "proposal p-1 was already decided" {
		t.Fatalf("Errorf: %v", err)
	}
	api := &APIError{Status: http.StatusNotFound, Message: "no agent"}
	if !errors.Is(api, ErrNotFound) || errors.Is(api, ErrConflict) {
		t.Fatal("APIError.Is does not follow the status code")
	}
}

func TestDefaultSocketPath(t *testing.T) {
	t.Setenv(SocketEnv, "/tmp/x.sock")
	if p := DefaultSocketPath(); p != "/tmp/x.sock" {
		t.Fatalf("with %s set: %s", SocketEnv, p)
	}
	t.Setenv(SocketEnv, "")
	t.Setenv("RUNTIME_DIRECTORY", "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if p := DefaultSocketPath(); p != "/run/user/1000/agentd/agentd.sock" {
		t.Fatalf("with XDG_RUNTIME_DIR: %s", p)
	}
}
