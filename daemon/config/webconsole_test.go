package config

import (
	"strings"
	"testing"
)

func TestWebConsoleListen(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		name, listen, want string
	}{
		{"default_loopback", "127.0.0.1:7077", ""},
		{"ipv6_loopback", "[::1]:0", ""},
		{"every_interface", "0.0.0.0:7077", "not a loopback IP"},
		{"empty_host", ":7077", "not a loopback IP"},
		{"a_name", "localhost:7077", "not a loopback IP"},
		{"no_port", "127.0.0.1", "is not host:port"},
		{"bad_port", "127.0.0.1:http", "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.WebConsole.Listen = tt.listen
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "web_console.listen") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a web_console.listen problem saying %q", err, tt.want)
			}
		})
	}
	if Default().WebConsole.Enabled {
		t.Error("the web console is on by default")
	}
}
