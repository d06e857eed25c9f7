#!/usr/bin/env bash
# The project's test command (README.md, .ci/run): installs what the tests
# need (Go modules, etcd, a kube-apiserver built from source, cached; OpenTofu
# and the azurerm provider built from source, cached, when asked), checks
# formatting and vet, runs a short fuzz of the fabric's request decoding and
# then the whole test suite with the race detector, end-to-end tests
# included. It ends with go test's own summary.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "Go modules"
go mod download

step "etcd and kube-apiserver for the end-to-end tests (built once, then cached)"
eval "$(scripts/kube-testenv.sh)"
# With ROUTEKEEPER_E2E=1 a missing control plane fails the tests instead of
# skipping them.
export ROUTEKEEPER_E2E=1

# The az end-to-end tests (test/e2e/azcli, and test/e2e/armaz: ARM template
# deployments, what-if and iac check) need Debian's azure-cli: on with
# ROUTEKEEPER_E2E_AZ=1, and in CI unless ROUTEKEEPER_E2E_AZ=0 (the install
# takes about two minutes, the tests about thirty seconds and a minute and a
# half).
if [ "${ROUTEKEEPER_E2E_AZ:-}" = 1 ] || { [ "${CI:-}" = true ] && [ "${ROUTEKEEPER_E2E_AZ:-}" != 0 ]; }; then
	step "azure-cli for the az end-to-end test"
	if ! command -v az >/dev/null; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq azure-cli >/dev/null
	fi
	export ROUTEKEEPER_E2E_AZ=1
fi

# The OpenTofu end-to-end suite (test/e2e/tofu) drives the fabric with the
# real tofu and azurerm provider, built from source by scripts/tofu-testenv.sh
# (about 25 minutes on an idle 2-core machine, 38 under load, and 10 GB of
# Go caches the first time; then cached: see docs/testing.md). It runs when
# both are cached already, and when asked with ROUTEKEEPER_E2E_TF=1 (which
# builds them and makes a broken suite fail, not skip); ROUTEKEEPER_E2E_TF=0
# turns it off. A fresh CI machine does not build them: that alone would
# take CI past the 45 minutes it must stay well under. The iac check tests
# run everywhere on the plans this suite recorded (internal/iac/testdata).
if [ "${ROUTEKEEPER_E2E_TF:-}" = 1 ]; then
	step "OpenTofu and the azurerm provider for the tofu end-to-end test (built once, then cached)"
	eval "$(scripts/tofu-testenv.sh)"
	export ROUTEKEEPER_E2E_TF=1
elif [ "${ROUTEKEEPER_E2E_TF:-}" != 0 ] && TOFU_TESTENV_CHECK=1 scripts/tofu-testenv.sh 2>/dev/null; then
	step "OpenTofu and the azurerm provider are cached: the tofu end-to-end test runs"
	eval "$(scripts/tofu-testenv.sh)"
	export ROUTEKEEPER_E2E_TF=1
else
	step "the tofu end-to-end test (test/e2e/tofu) is SKIPPED: tofu and the azurerm provider are not cached; ROUTEKEEPER_E2E_TF=1 builds them (about 25-40 minutes the first time) and runs it"
fi

step "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...

step "fuzz the fabric's request handling (short run)"
go test ./internal/fabric -run '^$' -fuzz '^FuzzHandler$' -fuzztime "${FUZZTIME:-20s}"

step "tests (with the race detector: the controller, informers and fabric are concurrent)"
# As root (CI) this includes the fabric's data plane tests (network
# namespaces); with ROUTEKEEPER_E2E=1 they fail rather than skip without root.
go test -race -count=1 "$@" ./...
