package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	every := flag.Duration("heartbeat", 30*time.Second, "how often to name the tests of packages still running")
	jsonOut := flag.String("json", "", "also save the raw go test -json stream to this file (timings for later)")
	trim := flag.String("trim", "github.com/agentd/agentd/", "import path prefix to leave out of package names")
	flag.Parse()

	var raw io.Writer = io.Discard
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsum: cannot save the JSON stream: %v (fix the -json path)\n", err)
			os.Exit(2)
		}
		defer f.Close()
		raw = f
	}
	s := newSummary(os.Stdout, *trim, *every)
	if failed := run(s, io.TeeReader(os.Stdin, raw)); failed {
		os.Exit(1)
	}
}

// run feeds each line of r to s, letting it beat (see tick) while lines are slow to come,
// and prints the closing summary when r ends. It reports whether anything failed.
func run(s *summary, r io.Reader) bool {
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20) // a test can log very long lines
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	tick := time.NewTicker(min(s.every, quietCheck))
	defer tick.Stop()
	s.lastOut, s.lastBeat = time.Now(), time.Now()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return s.finish()
			}
			var e event
			if json.Unmarshal(line, &e) != nil || e.Action == "" {
				s.printf(time.Now(), "%s\n", line) // not go test -json: a go command error, say
				continue
			}
			s.event(e, time.Now())
		case now := <-tick.C:
			s.tick(now)
		}
	}
}
