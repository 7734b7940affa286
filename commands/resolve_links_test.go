package commands

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolveLinks checks the path permission rules match besides the one written: the
// workspace's symlinks resolved, as the file commands open it.
func TestResolveLinks(t *testing.T) {
	s := newSandbox(t)
	for _, d := range []string{"secrets", "pub"} {
		os.MkdirAll(filepath.Join(s.ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(s.ws, "secrets/key"), []byte("k"), 0o600)
	os.Symlink("../secrets/key", filepath.Join(s.ws, "pub/key"))
	os.Symlink("../secrets", filepath.Join(s.ws, "pub/dir"))
	os.Symlink(s.outside, filepath.Join(s.ws, "pub/out"))
	tests := []struct {
		name, path, want string
		wantErr          bool
	}{
		{name: "file_link", path: "pub/key", want: "secrets/key"},
		{name: "through_folder_link", path: "pub/dir/key", want: "secrets/key"},
		{name: "new_file_in_linked_folder", path: "pub/dir/new", want: "secrets/new"},
		{name: "cleaned_first", path: "./pub//dir/../key", want: "secrets/key"},
		{name: "no_link", path: "pub/plain", want: "pub/plain"},
		{name: "link_out_refused", path: "pub/out/x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveLinks(s.ws, tt.path)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ResolveLinks(%q) = %q, %v; want %q (error %v)", tt.path, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
