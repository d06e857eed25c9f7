package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one child process (etcd or kube-apiserver) whose output goes to
// a log file.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	err     error         // exit status, valid once exited is closed
}

// startProcess starts bin with args; stdout and stderr go to dir/<name>.log.
func startProcess(dir, name, bin string, args []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop asks the process to shut down (SIGTERM) and kills it when it has not
// exited within grace.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	<-p.exited
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed: %w", p.name, grace, errKilled)
}

// errKilled marks a process that had to be killed at shutdown. It is not a
// test failure: a loaded kube-apiserver may still be finishing requests
// (watch caches, storage statistics) when the grace runs out, and once
// killed it is gone and its ports are free.
var errKilled = errors.New("killed after the shutdown grace")

// stopFailed returns the part of a stop error that is a real failure,
// leaving out processes that only had to be killed.
func stopFailed(err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var failed []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, errKilled) {
			failed = append(failed, e)
		}
	}
	return errors.Join(failed...)
}

// running reports an error when the process has already exited.
func (p *process) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited early: %v", p.name, p.err)
	default:
		return nil
	}
}

// tail returns the last n lines of the process log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = append([][]byte{[]byte(fmt.Sprintf("... (%d earlier lines in %s)", len(lines)-n, path))}, lines[len(lines)-n:]...)
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago. Another process may take one before we use it; Start retries then.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
