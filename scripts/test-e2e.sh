#!/usr/bin/env bash
# test-e2e.sh — run the end-to-end suites against a real control plane.
#
# Makes sure etcd and kube-apiserver are there (scripts/kube-testenv.sh; the
# first run builds kube-apiserver, later runs reuse the cache), then runs the
# packages under ./test/ with ROUTEKEEPER_E2E=1 so that a missing binary fails
# the run instead of skipping tests.
#
# Extra arguments go to `go test`, for example:
#   scripts/test-e2e.sh -run 'TestRBACEnforced/service_account_token'
# E2E_PACKAGES overrides the packages (default ./test/...).
set -Eeuo pipefail

cd "$(dirname "$0")/.."
env_lines="$(scripts/kube-testenv.sh)" || {
	echo "test-e2e: ERROR: scripts/kube-testenv.sh failed; see its messages above" >&2
	exit 1
}
eval "$env_lines"
export ROUTEKEEPER_E2E=1

# shellcheck disable=SC2086 # E2E_PACKAGES is a list of package patterns.
exec go test -count=1 -timeout=10m -v ${E2E_PACKAGES:-./test/...} "$@"
