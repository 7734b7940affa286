package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// maxReadBytes bounds what read_file loads; Run's output cap cuts the result further.
const maxReadBytes = 1 << 20

// readFile returns a text file from the workspace.
type readFile struct{}

type readFileArgs struct {
	Path string `json:"path" desc:"file path" max:"256"`
}

var readFileSpec = Spec{
	Name:        "read_file",
	Description: "Read a text file from the workspace",
	Params:      FromStruct(readFileArgs{}),
	Subject:     "path",
	Class:       ClassRead,
	Idempotent:  true,
}

func init() { Register(readFile{}) }

func (readFile) Spec() Spec { return readFileSpec }

func (readFile) Execute(_ context.Context, env Env, raw json.RawMessage) (string, error) {
	var a readFileArgs
	if err := decodeArgs("read_file", raw, &a); err != nil {
		return "", err
	}
	f, err := openRead(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if fi.IsDir() {
		return "", &pathError{path: a.Path, problem: "is a folder; use list_folder to see what is in it", err: ErrBadPath}
	}
	if !fi.Mode().IsRegular() {
		return "", &pathError{path: a.Path, problem: "is not a regular file", err: ErrBadPath}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReadBytes))
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if fi.Size() > maxReadBytes {
		data = trimPartialRune(data)
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", &pathError{path: a.Path, problem: "is not a text file (binary or not UTF-8); read_file only reads text", err: ErrBadPath}
	}
	if len(data) == 0 {
		return "(the file is empty)", nil
	}
	return string(data), nil
}

// trimPartialRune drops an incomplete UTF-8 sequence that a byte limit cut at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
