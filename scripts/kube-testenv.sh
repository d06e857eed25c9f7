#!/usr/bin/env bash
# kube-testenv.sh — make sure the binaries of the end-to-end control plane exist.
#
# Installs etcd (Debian package etcd-server) when no etcd is available and builds
# kube-apiserver from the k8s.io/kubernetes Go module into a cache directory, once.
# Both steps are skipped when the binary is already there and runs.
#
# stdout carries only shell export lines, so callers do:
#
#     eval "$(scripts/kube-testenv.sh)"
#
# Progress and errors go to stderr. Any failure ends the script with a non-zero
# status and a message that starts with "kube-testenv: ERROR".
#
# Environment:
#   ROUTEKEEPER_CACHE           cache root (default $HOME/.cache/routekeeper)
#   ROUTEKEEPER_ETCD            use this etcd binary instead of looking for one
#   ROUTEKEEPER_KUBE_APISERVER  use this kube-apiserver binary instead of building one
#   KUBE_VERSION                Kubernetes version to build (default v1.36.3; must match
#                               the project's client-go minor version)
set -Eeuo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
CACHE_ROOT="${ROUTEKEEPER_CACHE:-${HOME:?HOME is not set}/.cache/routekeeper}"
KUBE_DIR="${CACHE_ROOT}/kube/${KUBE_VERSION}"
# Oldest etcd the scripts accept. kube-apiserver 1.36 talks to etcd 3.4 and later
# (the etcd v3 API); features that need newer servers are switched off by its
# version check. See docs/testing.md.
ETCD_MIN_VERSION="3.4.0"

log() { printf 'kube-testenv: %s\n' "$*" >&2; }
die() {
	printf 'kube-testenv: ERROR: %s\n' "$*" >&2
	exit 1
}
trap 'rc=$?; printf "kube-testenv: ERROR: command failed (exit %s) at line %s: %s\n" "$rc" "$LINENO" "$BASH_COMMAND" >&2' ERR

# version_ge A B: true when dotted version A >= B.
version_ge() {
	[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# as_root runs a command as root (directly, or through sudo when available).
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -n "$@" || die "'$*' needs root; sudo -n failed (run the script as root or allow passwordless sudo)"
	else
		die "'$*' needs root and sudo is not installed; run the script as root"
	fi
}

# etcd_version prints the server version of an etcd binary ("3.4.23").
etcd_version() {
	"$1" --version 2>/dev/null | sed -n 's/^etcd Version: *//p' | head -n1
}

# install_etcd_package installs Debian's etcd-server without starting the system
# service: the tests run their own etcd on random loopback ports, and a system
# etcd on 2379 would only cost memory and confuse whoever debugs a failure.
install_etcd_package() {
	command -v apt-get >/dev/null 2>&1 || die "etcd is not installed and apt-get is not available; install etcd >= ${ETCD_MIN_VERSION} and set ROUTEKEEPER_ETCD"
	local policy=/usr/sbin/policy-rc.d created_policy=""
	if [ ! -e "$policy" ]; then
		# 101 = "action forbidden": invoke-rc.d and deb-systemd-invoke skip start/restart.
		as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 0755 $policy"
		created_policy=yes
	fi
	log "installing Debian package etcd-server (apt-get update + install)"
	local rc=0
	{
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
				-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold etcd-server
	} >&2 || rc=$?
	if [ -n "$created_policy" ]; then
		as_root rm -f "$policy"
	fi
	[ "$rc" -eq 0 ] || die "apt-get install etcd-server failed (exit $rc)"
	# policy-rc.d only covers this install; an existing policy-rc.d may allow
	# starts. Make sure no system etcd runs now or after a reboot.
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now etcd.service >&2 ||
			die "could not stop and disable the etcd.service that etcd-server installed"
	elif [ -x /etc/init.d/etcd ]; then
		as_root /etc/init.d/etcd stop >/dev/null 2>&1 || true
		as_root update-rc.d etcd disable >/dev/null 2>&1 || true
	fi
}

ensure_etcd() {
	local etcd="${ROUTEKEEPER_ETCD:-}"
	if [ -n "$etcd" ]; then
		[ -x "$etcd" ] || die "ROUTEKEEPER_ETCD=$etcd is not an executable file"
	elif etcd="$(command -v etcd 2>/dev/null)"; then
		:
	else
		install_etcd_package
		etcd="$(command -v etcd 2>/dev/null)" || die "etcd-server is installed but no etcd binary is on PATH"
	fi
	local v
	v="$(etcd_version "$etcd")"
	[ -n "$v" ] || die "$etcd --version did not print 'etcd Version: ...'; is it really etcd?"
	version_ge "$v" "$ETCD_MIN_VERSION" || die "$etcd is version $v; kube-apiserver ${KUBE_VERSION} needs etcd >= ${ETCD_MIN_VERSION}"
	log "etcd $v at $etcd"
	ETCD_BIN="$etcd"
}

# apiserver_ok: true when the binary exists and reports the wanted version.
apiserver_ok() {
	[ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx "Kubernetes ${KUBE_VERSION}"
}

# build_apiserver builds kube-apiserver from the k8s.io/kubernetes module.
#
# k8s.io/kubernetes is not meant to be used as a dependency: its go.mod requires
# every staging module (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and replaces
# them with ./staging/src/... directories that are not in the module zip. A
# throwaway module that requires k8s.io/kubernetes and replaces each of those
# requirements with the published v0.<minor>.<patch> tag makes it buildable.
build_apiserver() {
	local out="$1"
	command -v go >/dev/null 2>&1 || die "go is not on PATH; it is needed to build kube-apiserver"
	local staging_version="v0.${KUBE_VERSION#v1.}"
	local mod="${KUBE_DIR}/build"
	mkdir -p "$mod"
	rm -f "$mod/go.mod" "$mod/go.sum"
	log "building kube-apiserver ${KUBE_VERSION} (staging modules ${staging_version}) in $mod; the first build downloads modules and takes several minutes"

	# The go.sum of the throwaway module is written by -mod=mod. The checksum
	# of k8s.io/kubernetes cannot always be verified against sum.golang.org
	# from CI machines, so that one module (only, and only in this build) is
	# exempt; every other module is still checked against the checksum
	# database.
	export GOFLAGS="-mod=mod -buildvcs=false" GONOSUMDB=k8s.io/kubernetes GOWORK=off GO111MODULE=on
	export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

	local dl kmod
	if ! dl="$(cd "$mod" && go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}")"; then
		printf '%s\n' "$dl" >&2
		die "downloading k8s.io/kubernetes@${KUBE_VERSION} from the module proxy failed"
	fi
	kmod="$(printf '%s\n' "$dl" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
	[ -f "$kmod" ] || die "go mod download did not report the go.mod of k8s.io/kubernetes@${KUBE_VERSION}"

	# Every k8s.io module that k8s.io/kubernetes requires at v0.0.0 is a staging
	# module; the list comes from its go.mod, not from a copy here.
	local staging
	staging="$(awk '/^require[[:space:]]*\(/{r=1; next} r && /^\)/{r=0} r && $1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$kmod")"
	[ -n "$staging" ] || die "found no staging modules in $kmod; has the layout of k8s.io/kubernetes changed?"
	local goversion
	goversion="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kmod" | head -n1)"

	{
		printf '// Throwaway module generated by scripts/kube-testenv.sh to build kube-apiserver.\n'
		printf 'module routekeeper.local/kube-apiserver-build\n\ngo %s\n\n' "${goversion:-1.26.0}"
		printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
		local m
		for m in $staging; do
			printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"
		done
		printf ')\n'
	} >"$mod/go.mod"
	log "replaced $(printf '%s\n' $staging | wc -l) staging modules with ${staging_version}"

	local pkg=k8s.io/component-base/version
	local ldflags="-s -w -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1"
	ldflags+=" -X ${pkg}.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X ${pkg}.gitTreeState=clean"
	ldflags+=" -X ${pkg}.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

	local start=$SECONDS tmp="${out}.tmp.$$"
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver) >&2 ||
		{
			rm -f "$tmp"
			die "go build of kube-apiserver ${KUBE_VERSION} failed (module in $mod)"
		}
	mv -f "$tmp" "$out"
	log "built $out in $((SECONDS - start))s"
}

ensure_apiserver() {
	if [ -n "${ROUTEKEEPER_KUBE_APISERVER:-}" ]; then
		apiserver_ok "$ROUTEKEEPER_KUBE_APISERVER" ||
			die "ROUTEKEEPER_KUBE_APISERVER=$ROUTEKEEPER_KUBE_APISERVER does not run or is not Kubernetes ${KUBE_VERSION}"
		APISERVER_BIN="$ROUTEKEEPER_KUBE_APISERVER"
		log "kube-apiserver ${KUBE_VERSION} at $APISERVER_BIN (from ROUTEKEEPER_KUBE_APISERVER)"
		return
	fi
	local bin="${KUBE_DIR}/kube-apiserver"
	mkdir -p "$KUBE_DIR"
	# One build at a time per cache directory; a second caller waits and then
	# finds the binary.
	exec 9>"${KUBE_DIR}/.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9 || die "could not lock ${KUBE_DIR}/.lock"
	fi
	if apiserver_ok "$bin"; then
		log "kube-apiserver ${KUBE_VERSION} cached at $bin"
	else
		build_apiserver "$bin"
		apiserver_ok "$bin" || die "$bin was built but '$bin --version' does not print 'Kubernetes ${KUBE_VERSION}'"
	fi
	exec 9>&-
	APISERVER_BIN="$bin"
}

ensure_etcd
ensure_apiserver
printf 'export ROUTEKEEPER_ETCD=%q\n' "$ETCD_BIN"
printf 'export ROUTEKEEPER_KUBE_APISERVER=%q\n' "$APISERVER_BIN"
