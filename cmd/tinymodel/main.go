// Command tinymodel writes a tiny random-weight llama model (tiny.gguf) and a
// Modelfile for it into a directory. Its answers are noise: it exists so tests,
// benchmarks and offline demos can run a real Ollama server without
// downloading a model.
//
//	tinymodel -o DIR [-seed N]
//	ollama create agentd-tiny -f DIR/Modelfile   # optional: only to try it by hand
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/ollamatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tinymodel:", err)
		os.Exit(1)
	}
}

// run writes the files into -o DIR, prints their paths on stdout and a note on stderr.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tinymodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", "", "output `directory` for tiny.gguf and Modelfile (created if missing)")
	seed := fs.Int64("seed", 1, "random seed for the weights; the same seed gives the same file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("usage: tinymodel -o DIR")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}

	gguf := filepath.Join(*dir, "tiny.gguf")
	if err := writeFile(gguf, func(w *bufio.Writer) error { return ollamatest.WriteTinyModel(w, *seed) }); err != nil {
		return err
	}
	modelfile := filepath.Join(*dir, "Modelfile")
	if err := writeFile(modelfile, func(w *bufio.Writer) error {
		_, err := w.WriteString(ollamatest.TinyModelfile("./tiny.gguf"))
		return err
	}); err != nil {
		return err
	}
	fmt.Fprint(stderr, doneNote(modelfile))
	fmt.Fprintln(stdout, gguf)
	fmt.Fprintln(stdout, modelfile)
	return nil
}

// doneNote tells what was written and that serving it is optional: the test harness
// loads the files itself, and the model's answers are noise, not a usable assistant.
func doneNote(modelfile string) string {
	return "wrote a random-weight model: its answers are noise, for tests and offline demos only.\n" +
		"Nothing more is needed for the tests, which load it themselves. Only to try it by hand:\n" +
		"  ollama create " + ollamatest.TinyModelName + " -f " + modelfile + "\n"
}

// writeFile writes via a temp file and rename so a failed run leaves no
// half-written model behind.
func writeFile(path string, write func(*bufio.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tinymodel-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	if err := write(w); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
