package kubetest

import (
	"errors"
	"fmt"
	"testing"
)

func TestStopFailed(t *testing.T) {
	killed := fmt.Errorf("kube-apiserver did not stop within 10s of SIGTERM and was killed: %w", errKilled)
	real := errors.New("signalling etcd: operation not permitted")
	tests := []struct {
		name string
		err  error
		fail bool
	}{
		{"clean stop", nil, false},
		{"killed only", errors.Join(killed, nil), false},
		{"killed, alone", killed, false},
		{"a real failure", errors.Join(nil, real), true},
		{"killed and a real failure", errors.Join(killed, real), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stopFailed(tt.err)
			if (got != nil) != tt.fail {
				t.Fatalf("stopFailed(%v) = %v, want failure %v", tt.err, got, tt.fail)
			}
			if tt.fail && !errors.Is(got, real) {
				t.Fatalf("the real failure is lost: %v", got)
			}
		})
	}
}
