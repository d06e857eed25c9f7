package dataplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/run/netns"

// inNetns runs fn on an OS thread that is in the named network namespace.
// Sockets fn opens stay in that namespace; the thread goes back to its
// own namespace afterwards (or, if it cannot, ends with the goroutine).
func inNetns(name string, fn func() error) error {
	target, err := os.Open(filepath.Join(netnsDir, name))
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer target.Close()
	runtime.LockOSThread()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("reading this thread's network namespace: %w", err)
	}
	defer self.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it exits with this goroutine instead of
		// running other goroutines in the wrong namespace.
		return fmt.Errorf("leaving network namespace %s: %w", name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// setSysctls writes net sysctls (paths below /proc/sys/net) inside a
// namespace: /proc/sys/net shows the namespace of the thread that opens it.
func setSysctls(ns string, kv map[string]string) error {
	return inNetns(ns, func() error {
		for k, v := range kv {
			p := "/proc/sys/net/" + strings.ReplaceAll(k, ".", "/")
			err := os.WriteFile(p, []byte(v), 0o644)
			if errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(k, "ipv6.") {
				continue // a kernel without IPv6 has nothing to disable
			}
			if err != nil {
				return fmt.Errorf("sysctl net.%s=%s in %s: %w", k, v, ns, err)
			}
		}
		return nil
	})
}

// listNamespaces returns the named network namespaces that start with
// prefix + "-".
func listNamespaces(prefix string) ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing network namespaces: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// CheckPrivileges returns a clear error when this process cannot create
// network namespaces (it needs root or CAP_NET_ADMIN and CAP_SYS_ADMIN).
func CheckPrivileges() error {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("the data plane needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): reading capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if !has(unix.CAP_NET_ADMIN) || !has(unix.CAP_SYS_ADMIN) {
		return fmt.Errorf("the data plane needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create network namespaces); this process (uid %d) lacks them", os.Getuid())
	}
	return nil
}
