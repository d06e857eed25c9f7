package tofu

import "syscall"

// sysProcAttr puts a child in its own process group (so a stop reaches the
// provider plugins tofu starts) and makes the kernel kill it when the test
// binary dies without running its cleanups.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
