// Package nodeproc runs a runnel cluster on one machine as separate
// processes: n `runnel serve` nodes of the same binary, on loopback ports,
// whose embedded NATS servers form one cluster with clustered JetStream.
// `runnel demo --nodes` and the cluster fault test use it to kill a node
// with SIGKILL and start it again on the same data directory and ports.
//
// Each node keeps its data in <Dir>/node-<i> and its output (stdout and
// stderr, every run appended) in <Dir>/node-<i>.log, left in place for
// diagnosis.
package nodeproc

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config configures a cluster of node processes.
type Config struct {
	// Binary is the runnel executable (os.Executable() in runnel itself,
	// a freshly built binary in tests). Required.
	Binary string
	// Dir holds each node's data directory and log. Required.
	Dir string
	// Nodes is the number of nodes. Default 3.
	Nodes int
	// Replicas is the JetStream replica count (--replicas). Default 0:
	// serve's default, 3 for a cluster node.
	Replicas int
	// Args are extra flags for every node's serve (for example
	// "--log-level", "info"), placed after the global flags.
	Args []string
	// CPUProfile, if set, makes every node write a CPU profile of its
	// serve to CPUProfile+"."+<node name> (the global --cpuprofile). A
	// node stopped cleanly (Stop, Close) completes it; a restarted node
	// writes it again from its start; a node killed with SIGKILL leaves
	// it incomplete.
	CPUProfile string
	// StartTimeout bounds the wait for a node to print "serving".
	// Default 3 minutes (a node waits up to 2 minutes for its peers).
	StartTimeout time.Duration
}

// Node is one node process. Its ports stay the same across restarts.
type Node struct {
	// Name is the node's --node-name, "node-<i>".
	Name string
	// NATS is the client address (--listen), AWS the AWS endpoint
	// (--aws), Route the cluster address (--cluster-listen): host:port.
	NATS, AWS, Route string
	dataDir, logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Cluster is a running set of node processes.
type Cluster struct {
	cfg   Config
	Nodes []*Node
}

// Start starts the nodes at once (each waits for its peers) and returns
// when every one serves. A single node runs without the cluster flags. On error the nodes already started are stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Binary == "" || cfg.Dir == "" {
		return nil, errors.New("nodeproc: Binary and Dir are required")
	}
	cfg.Nodes = cmp.Or(cfg.Nodes, 3)
	cfg.StartTimeout = cmp.Or(cfg.StartTimeout, 3*time.Minute)
	ports, err := FreePorts(3 * cfg.Nodes)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	for i := range cfg.Nodes {
		name := fmt.Sprintf("node-%d", i)
		c.Nodes = append(c.Nodes, &Node{Name: name,
			NATS:    fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
			AWS:     fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			Route:   fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]),
			dataDir: filepath.Join(cfg.Dir, name), logPath: filepath.Join(cfg.Dir, name+".log")})
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Go(func() { errs[i] = c.Start(ctx, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// NATSURL is every node's client URL, comma-separated: a NATS client on
// it reconnects to another node when one dies.
func (c *Cluster) NATSURL() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, "nats://"+n.NATS)
	}
	return strings.Join(urls, ",")
}

// Start starts node i (again, after Kill) on its data directory and ports
// and waits until it serves, at most Config.StartTimeout. A node that
// exits before it serves is an error naming its log.
func (c *Cluster) Start(ctx context.Context, i int) error {
	n := c.Nodes[i]
	var routes []string
	for _, o := range c.Nodes {
		routes = append(routes, o.Route)
	}
	args := []string{"--data-dir", n.dataDir}
	if c.cfg.CPUProfile != "" {
		args = append(args, "--cpuprofile", c.cfg.CPUProfile+"."+n.Name)
	}
	args = append(args, c.cfg.Args...)
	args = append(args, "serve", "--listen", n.NATS, "--aws", n.AWS, "--node-name", n.Name, "--status-every", "0")
	if len(c.Nodes) > 1 {
		// One node alone is no cluster: its JetStream would wait for a
		// meta leader that a single clustered server does not elect.
		args = append(args, "--cluster-listen", n.Route, "--routes", strings.Join(routes, ","))
	}
	if c.cfg.Replicas > 0 {
		args = append(args, "--replicas", fmt.Sprint(c.cfg.Replicas))
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== %s: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), c.cfg.Binary, strings.Join(args, " "))
	cmd := exec.Command(c.cfg.Binary, args...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("nodeproc: start %s: %w", n.Name, err)
	}
	ready, exited := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.OnceFunc(func() { close(ready) })
		for sc.Scan() {
			fmt.Fprintf(logf, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), sc.Text())
			if strings.HasPrefix(sc.Text(), "serving") {
				once()
			}
		}
		io.Copy(logf, stdout)
		cmd.Wait()
		fmt.Fprintf(logf, "=== %s: exited: %v\n", time.Now().UTC().Format(time.RFC3339Nano), cmd.ProcessState)
		logf.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	timer := time.NewTimer(c.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("nodeproc: %s exited before serving (%v); see %s", n.Name, cmd.ProcessState, n.logPath)
	case <-timer.C:
		n.signal(syscall.SIGKILL)
		return fmt.Errorf("nodeproc: %s did not serve within %v; see %s", n.Name, c.cfg.StartTimeout, n.logPath)
	case <-ctx.Done():
		n.signal(syscall.SIGKILL)
		return ctx.Err()
	}
}

// Kill kills node i with SIGKILL and waits until the process is gone.
func (c *Cluster) Kill(i int) {
	c.Nodes[i].signal(syscall.SIGKILL)
	c.Nodes[i].wait()
}

// Stop stops node i with SIGTERM (a clean stop: checkpoints stored,
// leases handed over), and with SIGKILL if it has not exited after 30 s.
func (c *Cluster) Stop(i int) {
	n := c.Nodes[i]
	n.signal(syscall.SIGTERM)
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		c.Kill(i)
	}
}

// Close stops every node (SIGTERM, then SIGKILL after 30 s), all at once.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Go(func() { c.Stop(i) })
	}
	wg.Wait()
}

// Running reports whether node i's process is running.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// LogPath is the file the node's output is appended to.
func (n *Node) LogPath() string { return n.logPath }

func (n *Node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(sig)
	}
}

func (n *Node) wait() {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

// FreePorts returns n distinct TCP ports free on 127.0.0.1 now (each
// listened on until all are found, so none comes twice). Another process
// may take one before the caller binds it.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
