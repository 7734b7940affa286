package api

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
		{"help_word_is_not_feedback", "help", DecideRequest{}, true},
		{"help_mark_is_not_feedback", " ? ", DecideRequest{}, true},
		{"help_letter_upper_is_not_feedback", "H", DecideRequest{}, true},
		{"help_sentence_is_feedback", "help me with the tests", DecideRequest{Kind: DecisionFeedback, Feedback: "help me with the tests"}, false},
		{"question_marks_are_feedback", "?? why", DecideRequest{Kind: DecisionFeedback, Feedback: "?? why"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseDecision(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, c.wantErr)
			}
			if IsHelp(c.in) != errors.Is(err, ErrHelp) {
				t.Fatalf("IsHelp(%q) = %v but ParseDecision's error is %v", c.in, IsHelp(c.in), err)
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestIsHelp(t *testing.T) {
	cases := []struct {
		name, in     string
		help, answer bool // IsHelp, IsAnswerHelp
	}{
		{"question_mark", "?", true, true},
		{"question_mark_spaced", "  ?\n", true, true},
		{"help", "help", true, false},
		{"help_upper", "HELP", true, false},
		{"h", "h", true, false},
		{"h_upper_spaced", " H ", true, false},
		{"help_sentence", "help me with X", false, false},
		{"two_marks_and_words", "?? why", false, false},
		{"two_marks", "??", false, false},
		{"mark_in_sentence", "why ?", false, false},
		{"hh", "hh", false, false},
		{"helpful", "helpful", false, false},
		{"empty", "", false, false},
		{"y", "y", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsHelp(c.in); got != c.help {
				t.Errorf("IsHelp(%q) = %v, want %v", c.in, got, c.help)
			}
			if got := IsAnswerHelp(c.in); got != c.answer {
				t.Errorf("IsAnswerHelp(%q) = %v, want %v", c.in, got, c.answer)
			}
		})
	}
	// The help names every answer ParseDecision takes.
	for _, word := range []string{"y ", "y -N", "y!", "n ", "n!", "TEXT", "?"} {
		if !strings.Contains(ErrHelp.Error(), word) {
			t.Errorf("the help does not explain %q:\n%s", word, ErrHelp)
		}
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

// TestSocketPlaces: the first place is DefaultSocketPath's in every environment, and
// the others are where agentd listens when started elsewhere, each once.
func TestSocketPlaces(t *testing.T) {
	uid := os.Getuid()
	tmp := filepath.Join(os.TempDir(), fmt.Sprintf("agentd-%d", uid), "agentd.sock")
	userService := fmt.Sprintf("/run/user/%d/agentd/agentd.sock", uid)
	lastResort := tmp
	if uid == 0 {
		lastResort = "/run/agentd/agentd.sock"
	}
	for _, tc := range []struct {
		name                 string
		socket, runtime, xdg string
		first, from          string
	}{
		{"socket_env", "/srv/a.sock", "", "/run/user/7", "/srv/a.sock", "$AGENTD_SOCKET"},
		{"systemd_runtime_directory", "", "/run/agentd:/other", "", "/run/agentd/agentd.sock", "$RUNTIME_DIRECTORY"},
		{"xdg_runtime_dir", "", "", "/run/user/7", "/run/user/7/agentd/agentd.sock", "$XDG_RUNTIME_DIR"},
		{"nothing_set", "", "", "", lastResort, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(SocketEnv, tc.socket)
			t.Setenv("RUNTIME_DIRECTORY", tc.runtime)
			t.Setenv("XDG_RUNTIME_DIR", tc.xdg)
			places := SocketPlaces()
			if places[0].Path != tc.first || DefaultSocketPath() != tc.first || (tc.from != "" && places[0].From != tc.from) {
				t.Errorf("first place %+v, default %s; want %s from %s", places[0], DefaultSocketPath(), tc.first, tc.from)
			}
			seen := map[string]bool{}
			for _, p := range places {
				if seen[p.Path] || p.From == "" {
					t.Errorf("%+v: listed twice or without its source in %+v", p, places)
				}
				seen[p.Path] = true
			}
			for _, want := range []string{tmp, userService, "/run/agentd/agentd.sock"} {
				if !seen[want] {
					t.Errorf("%s is not among the places: %+v", want, places)
				}
			}
		})
	}
}
