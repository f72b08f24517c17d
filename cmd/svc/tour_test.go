package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's tour, run as written (issue 20): the serve line of its set-up, then every
// command of the block after its "<!-- tour -->" marker, in one shell, from a directory laid
// out as the README's (./bin/svc, ./svc-data). What the test changes, and nothing else:
//   - the server listens on a free port rather than 8080 (--addr; "localhost:8080" and
//     "127.0.0.1:8080" in commands name it);
//   - the words in CAPITALS are the ids an earlier command printed (tourIDs says where each
//     comes from; RECEIPT_ID and EXECUTION_ID are the first apply's, the clean-up's).
//
// Every command must exit 0 (svc apply exits 1 unless its execution completed). A README
// command the test cannot run (a placeholder nothing printed) fails it.
func TestREADMETour(t *testing.T) {
	if testing.Short() {
		t.Skip("the README tour runs the built binary against a seeded server")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	serveLine, tour, err := readmeTour(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	build, serveCmd, ok := strings.Cut(serveLine, " && ")
	if build != "go build -o bin/svc ./cmd/svc" || !ok || !strings.HasPrefix(serveCmd, "./bin/svc serve ") {
		t.Fatalf("the README's run command is %q; this test knows \"go build -o bin/svc ./cmd/svc && ./bin/svc serve ...\"", serveLine)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "svc"), ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	started := time.Now()

	// The server, as the README runs it, on a free port.
	args := append(strings.Fields(strings.TrimPrefix(serveCmd, "./bin/svc ")), "--addr", "127.0.0.1:0")
	srv := exec.Command(filepath.Join(dir, "bin", "svc"), args...)
	srv.Dir = dir
	srv.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir())
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var serveLog strings.Builder
	base := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`msg="svc listening" base_url=(\S+)`)
		for sc.Scan() {
			serveLog.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				base <- m[1]
			}
		}
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		srv.Process.Signal(syscall.SIGTERM) // the README's stop: the process held is the server
		done := make(chan error, 1)
		go func() { done <- srv.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			srv.Process.Kill()
			t.Errorf("svc serve did not stop within 30 s of SIGTERM")
		}
	}
	defer stop()
	var addr string
	select {
	case b := <-base:
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		addr = u.Host
	case <-time.After(60 * time.Second):
		t.Fatalf("svc serve did not start:\n%s", serveLog.String())
	}
	t.Logf("server up in %s", time.Since(started).Round(time.Millisecond))

	sh := newTourShell(t, dir)
	defer sh.close()
	ids := map[string]string{}
	for _, c := range tour {
		line := strings.NewReplacer("localhost:8080", addr, "127.0.0.1:8080", addr).Replace(c)
		if i := strings.Index(line, "  #"); i >= 0 { // a comment: ids it names are printed by the command
			line = strings.TrimSpace(line[:i])
		}
		for _, w := range placeholder.FindAllString(line, -1) {
			id, ok := ids[w]
			if !ok {
				t.Fatalf("README tour: %q needs %s, which no earlier command printed", c, w)
			}
			line = strings.ReplaceAll(line, w, id)
		}
		at := time.Now()
		out, code := sh.run(line)
		t.Logf("$ %s  (%s, exit %d)", line, time.Since(at).Round(time.Millisecond), code)
		if code != 0 {
			t.Fatalf("README tour: %q exited %d:\n%s", c, code, out)
		}
		tourIDs(ids, line, out)
	}
	stop()
	<-logDone
	t.Logf("README tour: %d commands in %s", len(tour), time.Since(started).Round(time.Second))
	// The tour stays under 1 GB on disk: the data directory and what it wrote beside it.
	written := dirBytes(t, dir) - dirBytes(t, filepath.Join(dir, "bin"))
	t.Logf("README tour wrote %d bytes (%.1f MiB)", written, float64(written)/(1<<20))
	if written >= 1e9 {
		var parts []string
		for _, d := range []string{dir, filepath.Join(dir, "svc-data")} {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				parts = append(parts, fmt.Sprintf("%s: %.1f MiB", filepath.Join(filepath.Base(d), e.Name()), float64(dirBytes(t, filepath.Join(d, e.Name())))/(1<<20)))
			}
		}
		t.Errorf("the tour wrote %d bytes, over 1 GB:\n%s", written, strings.Join(parts, "\n"))
	}
	if strings.Contains(serveLog.String(), "level=ERROR") {
		t.Errorf("the server logged errors:\n%s", serveLog.String())
	}
}

// placeholder is a word in CAPITALS the README asks the reader to fill in with an id.
var placeholder = regexp.MustCompile(`\b(PLAN_ID|HASH|EXECUTION_ID|RECEIPT_ID|SOURCE_ID|DESTINATION_ID|JOB_ID)\b`)

// tourIDs records the ids a tour command printed, under the README's words for them.
func tourIDs(ids map[string]string, line, out string) {
	if m := regexp.MustCompile(`plan authorize (pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(out); m != nil {
		ids["PLAN_ID"], ids["HASH"] = m[1], m[2]
	}
	first := func(name, re string) {
		if _, ok := ids[name]; ok {
			return
		}
		if m := regexp.MustCompile(re).FindStringSubmatch(out); m != nil {
			ids[name] = m[1]
		}
	}
	if strings.Contains(line, "svc apply ") {
		first("EXECUTION_ID", `Execution (exe_\S+) of plan`)
		first("RECEIPT_ID", `Receipt (rcp_\S+) verified`)
	}
	first("SOURCE_ID", `(?m)^(src_\S+)\s.*Simulated archive mailbox`)
	first("DESTINATION_ID", `(?m)^(dst_\S+)\s.*Local export folder`)
	first("JOB_ID", `(?m)^(job_\S+)\s+export\s+succeeded`)
}

// readmeTour returns the README's run command (the first command of the block after the first
// "<!-- tour" marker) and the commands of the block after the "<!-- tour -->" marker: comment
// lines dropped, continued lines joined.
func readmeTour(readme string) (serve string, tour []string, err error) {
	blocks := map[string][]string{}
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		marker := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(marker, "<!-- tour") {
			continue
		}
		var cmds []string
		cur := ""
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		for ; j < len(lines) && (strings.HasPrefix(lines[j], "    ") || strings.TrimSpace(lines[j]) == ""); j++ {
			l := strings.TrimSpace(lines[j])
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if strings.HasSuffix(l, `\`) {
				cur += strings.TrimSuffix(l, `\`) + " "
				continue
			}
			cmds = append(cmds, cur+l)
			cur = ""
		}
		key := "setup"
		if marker == "<!-- tour -->" {
			key = "tour"
		}
		if _, seen := blocks[key]; !seen {
			blocks[key] = cmds
		}
		i = j - 1
	}
	if len(blocks["setup"]) == 0 || len(blocks["tour"]) == 0 {
		return "", nil, fmt.Errorf("README.md: want a block after a \"<!-- tour: ... -->\" marker (the run command) and one after \"<!-- tour -->\" (the tour); found %d and %d commands", len(blocks["setup"]), len(blocks["tour"]))
	}
	return blocks["setup"][0], blocks["tour"], nil
}

// tourShell is one bash the tour's commands run in, one after another, so that the variables a
// command sets (KEY=..., CXN=...) hold for the next ones, as in a reader's terminal.
type tourShell struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newTourShell(t *testing.T, dir string) *tourShell {
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "SVC_DATA=", "SVC_URL=", "SVC_API_KEY=", "SVC_SESSION=", "SVC_CONNECTION_ID=")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); pw.Close() }()
	return &tourShell{t: t, cmd: cmd, in: in, out: bufio.NewReader(pr)}
}

const tourEnd = "__svc_tour_end__"

// run runs one command line and returns what it printed and its exit status.
func (s *tourShell) run(line string) (string, int) {
	fmt.Fprintf(s.in, "%s\n__rc=$?; echo; echo %s $__rc\n", line, tourEnd)
	var out strings.Builder
	for {
		l, err := s.out.ReadString('\n')
		if strings.HasPrefix(l, tourEnd+" ") {
			var code int
			fmt.Sscan(strings.TrimPrefix(l, tourEnd+" "), &code)
			return out.String(), code
		}
		out.WriteString(l)
		if err != nil {
			s.t.Fatalf("the tour's shell ended: %v\n%s", err, out.String())
		}
	}
}

func (s *tourShell) close() {
	s.in.Close()
	s.cmd.Process.Kill()
}

// dirBytes is the disk space the files under dir take (allocated blocks, as du counts them).
func dirBytes(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
