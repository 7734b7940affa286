package agentprotocol

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/internal/randid"
)

// uploadsFile lists, in the workspace, the files that came in through the protocol, so
// that agent_created stays right across restarts. Hidden files are not artifacts.
const uploadsFile = ".agentprotocol-uploads.json"

// maxUploadsRecord bounds what is read of uploadsFile: thousands of paths.
const maxUploadsRecord = 1 << 20

// maxArtifacts bounds a workspace walk: a task lists at most this many files.
const maxArtifacts = 10000

// maxArtifactDepth bounds how deep the walk looks for files: it reaches each folder by
// its path from the top, so a chain of folders the agent nested thousands deep would cost
// every listing time in the square of its depth.
const maxArtifactDepth = 32

// artifactID is a file's id: its slash-separated relative path, base64url without padding.
func artifactID(rel string) string { return base64.RawURLEncoding.EncodeToString([]byte(rel)) }

// artifactPath reverses artifactID, refusing anything that is not a plain visible path
// inside the workspace.
func artifactPath(id string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return "", false
	}
	rel := string(b)
	return rel, visible(rel)
}

// visible reports whether rel is a clean relative path with no hidden part.
func visible(rel string) bool {
	if rel == "" || !filepath.IsLocal(rel) || path.Clean(rel) != rel || strings.ContainsRune(rel, 0) {
		return false
	}
	for part := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return false
		}
	}
	return true
}

// artifactOf is the artifact of workspace file rel. Its name and folder are shown to a
// person as shown shows them (a name the agent chose may hold ESC, U+202E or a
// line break); its id names the file itself.
func (h *handler) artifactOf(rel string, uploaded map[string]bool) Artifact {
	dir, name := path.Split(rel)
	return Artifact{ArtifactID: artifactID(rel), AgentCreated: !uploaded[rel], FileName: shown(name),
		RelativePath: shown(strings.TrimSuffix(dir, "/"))}
}

// artifacts lists the visible regular files of a's workspace, by path; none for a
// deleted agent or a workspace not made yet.
func (h *handler) artifacts(a *api.Agent) ([]Artifact, error) {
	out := []Artifact{}
	if a == nil {
		return out, nil
	}
	root, err := commands.OpenWorkspace(a.Workspace)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	} else if err != nil {
		return nil, fmt.Errorf("workspace of %s: %w", a.Name, err)
	}
	defer root.Close()
	uploaded := readUploads(root)
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed mid-walk, or unreadable: not listed
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && strings.Count(p, "/") >= maxArtifactDepth-1 {
			return fs.SkipDir
		}
		if d.Type().IsRegular() {
			out = append(out, h.artifactOf(p, uploaded))
			if len(out) >= maxArtifacts {
				return fs.SkipAll
			}
		}
		return nil
	})
	return out, err
}

// artifactAt is the artifact for a file in a's workspace, nil when it is not one.
func (h *handler) artifactAt(a *api.Agent, rel string) *Artifact {
	if a == nil || !visible(rel) {
		return nil
	}
	root, err := commands.OpenWorkspace(a.Workspace)
	if err != nil {
		return nil
	}
	defer root.Close()
	if fi, err := root.Lstat(rel); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	art := h.artifactOf(rel, readUploads(root))
	return &art
}

func (h *handler) listArtifacts(w http.ResponseWriter, r *http.Request) error {
	cur, size, err := pageParams(r)
	if err != nil {
		return err
	}
	_, a, err := h.task(r.Context(), r.PathValue("task_id"))
	if err != nil {
		return err
	}
	all, err := h.artifacts(a)
	if err != nil {
		return err
	}
	lo, hi, p := paginate(len(all), cur, size)
	return localapi.Reply(w, http.StatusOK, ArtifactListResponse{Artifacts: all[lo:hi], Pagination: p})
}

// downloadArtifact streams a workspace file.
func (h *handler) downloadArtifact(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("task_id")
	_, a, err := h.task(r.Context(), id)
	if err != nil {
		return err
	}
	aid := r.PathValue("artifact_id")
	notFound := errorf(http.StatusNotFound, "task %s has no artifact %q", id, aid)
	rel, ok := artifactPath(aid)
	if !ok || a == nil {
		return notFound
	}
	// As the file commands read: never out of the workspace, never through a hard link,
	// never waiting on a FIFO the agent's shell left under the name.
	f, err := commands.OpenRead(a.Workspace, rel)
	if err != nil {
		return notFound
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return notFound
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(rel)}))
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return nil
}

// uploadArtifact writes a multipart "file" into the workspace, under the optional
// "relative_path" folder, atomically; an existing file of that name is replaced.
func (h *handler) uploadArtifact(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("task_id")
	_, a, err := h.task(r.Context(), id)
	if err != nil {
		return err
	}
	if a == nil {
		return errorf(http.StatusConflict, "task %s: its agent was deleted", id)
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.maxUpload+1<<20) // the file and the form around it
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errorf(http.StatusRequestEntityTooLarge, "upload larger than %d bytes", h.maxUpload)
		}
		return errorf(http.StatusBadRequest, "want a multipart/form-data body with a \"file\" part: %v", err)
	}
	defer r.MultipartForm.RemoveAll()
	files := r.MultipartForm.File["file"]
	if len(files) != 1 {
		return errorf(http.StatusBadRequest, "want exactly one \"file\" part, got %d", len(files))
	}
	fh := files[0]
	if fh.Size > h.maxUpload {
		return errorf(http.StatusRequestEntityTooLarge, "upload of %d bytes: at most %d", fh.Size, h.maxUpload)
	}
	name := fh.Filename
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return errorf(http.StatusBadRequest, "file name %q: want a plain name, not a path and not hidden (put folders in relative_path)", name)
	}
	dir := strings.Trim(r.FormValue("relative_path"), "/")
	rel := name
	if dir != "" {
		rel = dir + "/" + name
	}
	if !visible(rel) {
		return errorf(http.StatusBadRequest, "relative_path %q: want a folder inside the workspace, with no .. and no hidden parts", r.FormValue("relative_path"))
	}
	src, err := fh.Open()
	if err != nil {
		return err
	}
	defer src.Close()
	root, err := commands.OpenWorkspace(a.Workspace)
	if err != nil {
		return fmt.Errorf("workspace of %s: %w", a.Name, err)
	}
	defer root.Close()
	if err := writeFile(root, rel, src); err != nil {
		h.log.Warn("agent protocol: upload refused", "task", id, "path", rel, "err", err)
		return errorf(http.StatusBadRequest, "writing %s into the workspace: %v", rel, err)
	}
	h.uploadsMu.Lock()
	err = addUpload(root, rel)
	h.uploadsMu.Unlock()
	if err != nil {
		h.log.Warn("agent protocol: recording an upload", "task", id, "path", rel, "err", err)
	}
	h.log.Info("agent protocol: artifact uploaded", "task", id, "path", rel, "bytes", fh.Size)
	art := h.artifactOf(rel, map[string]bool{rel: true})
	return localapi.Reply(w, http.StatusOK, art)
}

// writeFile writes src to rel inside root through a temporary file and a rename, so a
// reader (the agent) never sees half a file.
func writeFile(root *os.Root, rel string, src io.Reader) error {
	dir := path.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	tmp := path.Join(dir, ".upload-"+randid.Hex(6))
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

func readUploads(root *os.Root) map[string]bool {
	m := map[string]bool{}
	// The agent can put anything under this name: O_NONBLOCK so a FIFO fails rather than
	// waits, a regular file only, and no more of it than a record of uploads needs.
	f, err := root.OpenFile(uploadsFile, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return m
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return m
	}
	b, err := io.ReadAll(io.LimitReader(f, maxUploadsRecord))
	if err != nil {
		return m
	}
	var list []string
	json.Unmarshal(b, &list)
	for _, p := range list {
		m[p] = true
	}
	return m
}

func addUpload(root *os.Root, rel string) error {
	m := readUploads(root)
	if m[rel] {
		return nil
	}
	m[rel] = true
	list := make([]string, 0, len(m))
	for p := range m {
		list = append(list, p)
	}
	slices.Sort(list)
	b, _ := json.Marshal(list)
	return writeFile(root, uploadsFile, strings.NewReader(string(b)))
}
