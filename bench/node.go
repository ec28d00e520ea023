package bench

// The Node.js peers of the endpoint benchmarks: an npm package (kinesalite,
// dynalite) installed under bench/<name>, started by node on a free
// loopback port in its own process.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/internal/nodeproc"
)

// nodePeer is an npm package that a benchmark runs as its peer server.
type nodePeer struct {
	// name is the npm package's name; bench/<name> holds the package.json
	// that pins its version.
	name string
	// env is the environment variable naming the package to use instead.
	env string
	// flag is the command's flag naming it (for the error messages).
	flag string
	// zeroMs are the package's delays (createStreamMs, ...) that it runs
	// with at 0.
	zeroMs []string
}

// script is run by `node -e` with the package directory and the port as
// process.argv[1] and [2]: it runs the package's server as its command
// line does, with its in-memory store and the delays zeroMs 0, but
// listening on 127.0.0.1 only (the command line listens on every
// interface), and prints "listening" once it does.
func (p nodePeer) script() string {
	opts := make([]string, len(p.zeroMs))
	for i, o := range p.zeroMs {
		opts[i] = o + ": 0"
	}
	return "\nvar server = require(process.argv[1])({" + strings.Join(opts, ", ") + "})\n" +
		"server.listen(+process.argv[2], '127.0.0.1', function () { console.log('listening') })\n"
}

// how says how the script runs it, for the report.
func (p nodePeer) how() string {
	return "separate process, in-memory store, " + strings.Join(p.zeroMs, "/") + " 0"
}

// find returns the package to run: $env, else
// bench/<name>/node_modules/<name> of this checkout (found from the
// working directory upwards; `npm install` in bench/<name> puts it there),
// else a <name> on PATH. It fails, saying what to install, when there is
// none or no node to run it.
func (p nodePeer) find() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed (%s needs Node.js: apt-get install nodejs npm, then npm install in bench/%s)", p.name, p.name)
	}
	if path := os.Getenv(p.env); path != "" {
		return path, nil
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			for _, rel := range []string{"bench/" + p.name + "/node_modules/" + p.name, p.name + "/node_modules/" + p.name} {
				path := filepath.Join(dir, rel)
				if _, err := os.Stat(filepath.Join(path, "index.js")); err == nil {
					return path, nil
				}
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if path, err := exec.LookPath(p.name); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("%s is not installed (run `npm install` in bench/%s, or set %s / $%s to a %s package)", p.name, p.name, p.flag, p.env, p.name)
}

// noPeer, as the package asked for, measures runnel alone.
const noPeer = "none"

// resolve returns the package to run for asked (a path; "": find's;
// noPeer: none), or, when there is none, why it is skipped (also written
// to progress when set).
func (p nodePeer) resolve(asked string, progress io.Writer) (path, skipped string) {
	switch asked {
	case noPeer:
		skipped = "not asked for (" + p.flag + " " + noPeer + ")"
	case "":
		var err error
		if path, err = p.find(); err != nil {
			skipped = err.Error()
		}
	default:
		path = asked
	}
	if skipped != "" && progress != nil {
		fmt.Fprintf(progress, "%s skipped: %s\n", p.name, skipped)
	}
	return path, skipped
}

// pkg returns the package directory that path (the package, or the
// script of node_modules/.bin that links into it) names, and its version;
// it fails unless that is the package.
func (p nodePeer) pkg(path string) (dir, version string, err error) {
	dir, err = filepath.EvalSymlinks(path)
	if err != nil {
		return "", "", fmt.Errorf("%s %s: %w", p.name, path, err)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		dir = filepath.Dir(dir) // .bin/<name> links to <package>/cli.js
	}
	var meta struct {
		Name, Version string
	}
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err != nil || json.Unmarshal(b, &meta) != nil || meta.Name != p.name {
		return "", "", fmt.Errorf("%s is not the %s package (no package.json naming %s)", dir, p.name, p.name)
	}
	return dir, meta.Version, nil
}

// start starts the package at path (see pkg) on a free loopback port.
func (p nodePeer) start(ctx context.Context, path string) (*endpointServer, error) {
	pkg, version, err := p.pkg(path)
	if err != nil {
		return nil, err
	}
	nodeVersion, _ := exec.Command("node", "--version").Output()
	ports, err := nodeproc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	cmd := exec.Command("node", "-e", p.script(), pkg, strconv.Itoa(port))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: &out}, &lockedWriter{w: &out}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s exited: %s", p.name, out.String())
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("%s did not listen on %s within 30 s: %s", p.name, addr, out.String())
		}
	}
	return &endpointServer{
		url:         "http://" + addr,
		description: fmt.Sprintf("%s %s on node %s (%s)", p.name, version, strings.TrimSpace(string(nodeVersion)), p.how()),
		stop:        stop,
		cpu:         func() time.Duration { return processCPUOf(cmd.Process.Pid) },
	}, nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
