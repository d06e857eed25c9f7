//go:build !linux

package kubetest

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; the cleanups of
// Start and Shared stop the processes.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
