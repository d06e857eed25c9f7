package kubetest

import "syscall"

// sysProcAttr makes the kernel kill etcd and kube-apiserver when the test
// binary dies without running its cleanups (for example on a test timeout
// panic), so no control plane outlives its tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
