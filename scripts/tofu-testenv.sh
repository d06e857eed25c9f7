#!/usr/bin/env bash
# tofu-testenv.sh — make sure OpenTofu and the azurerm provider exist, built from source.
#
# Builds the `tofu` CLI from the github.com/opentofu/opentofu Go module and the
# terraform-provider-azurerm plugin from github.com/hashicorp/terraform-provider-azurerm
# into a cache directory, once each, one build at a time. The end-to-end suite
# test/e2e/tofu drives the local fabric with them; the provider is used through a
# CLI configuration `dev_overrides` block, so no registry is involved.
#
# stdout carries only shell export lines, so callers do:
#
#     eval "$(scripts/tofu-testenv.sh)"
#
# Progress and errors go to stderr. Any failure ends the script with a non-zero
# status and a message that starts with "tofu-testenv: ERROR".
#
# Environment:
#   ROUTEKEEPER_CACHE    cache root (default $HOME/.cache/routekeeper)
#   ROUTEKEEPER_TOFU     use this tofu binary instead of building one
#   ROUTEKEEPER_AZURERM  use this terraform-provider-azurerm binary instead of building one
#   TOFU_VERSION         OpenTofu release to build (default v1.12.6)
#   AZURERM_VERSION      module version of the provider (default: the newest the Go
#                        module proxy serves; see below)
#   TOFU_TESTENV_CHECK=1 only report what is cached (exit 0 when both binaries are
#                        there, 3 when one would have to be built); never builds
#
# Costs on a 2-core machine (docs/testing.md has the measurements): OpenTofu
# about 10 minutes and 1.5 GB of build cache, azurerm about 15 minutes, 5 GB of
# build cache and a binary of about 330 MB.
set -Eeuo pipefail

TOFU_VERSION="${TOFU_VERSION:-v1.12.6}"
# The provider's release tags (v4.x.y) are not valid versions of its module: its
# go.mod says `module github.com/hashicorp/terraform-provider-azurerm`, without the
# /v4 suffix a v4 tag needs. `go list -m -versions` therefore lists nothing and the
# proxy serves only pseudo-versions of commits on the default branch; `@latest`
# picks the newest. Pin one here so the cache key is stable; bump it with
#   go list -m -json github.com/hashicorp/terraform-provider-azurerm@latest
AZURERM_VERSION="${AZURERM_VERSION:-v1.44.1-0.20260824201233-fae580791926}"
CACHE_ROOT="${ROUTEKEEPER_CACHE:-${HOME:?HOME is not set}/.cache/routekeeper}"
TOFU_DIR="${CACHE_ROOT}/tofu/${TOFU_VERSION}"
AZURERM_DIR="${CACHE_ROOT}/azurerm/${AZURERM_VERSION}"
LOCK="${CACHE_ROOT}/tofu-testenv.lock"

log() { printf 'tofu-testenv: %s\n' "$*" >&2; }
die() {
	printf 'tofu-testenv: ERROR: %s\n' "$*" >&2
	exit 1
}
trap 'rc=$?; printf "tofu-testenv: ERROR: command failed (exit %s) at line %s: %s\n" "$rc" "$LINENO" "$BASH_COMMAND" >&2' ERR

# built_from BIN MODULE VERSION: true when BIN is a Go binary whose build info
# names MODULE at VERSION (as main module or dependency).
built_from() {
	[ -x "$1" ] || return 1
	go version -m "$1" 2>/dev/null | awk -v m="$2" -v v="$3" '($1 == "mod" || $1 == "dep") && $2 == m && $3 == v {ok=1} END {exit !ok}'
}

# tofu_ok reads `tofu version` whole before matching: with pipefail, grep -q
# closing the pipe early could make tofu die of SIGPIPE and fail the check.
tofu_ok() {
	built_from "$1" github.com/opentofu/opentofu "$TOFU_VERSION" || return 1
	local v
	v="$("$1" version 2>/dev/null)" || return 1
	grep -q "^OpenTofu ${TOFU_VERSION}\$" <<<"$v"
}
azurerm_ok() { built_from "$1" github.com/hashicorp/terraform-provider-azurerm "$AZURERM_VERSION"; }

# go_env sets the build environment. Every module's checksum is verified
# against sum.golang.org (through the module proxy); GONOSUMDB stays empty
# because every module these two builds need verifies here. Set
# TOFU_TESTENV_GONOSUMDB to a comma-separated module list only if a module
# cannot be verified on your network.
go_env() {
	export GOFLAGS="-mod=mod -buildvcs=false" GOWORK=off GO111MODULE=on CGO_ENABLED=0
	export GONOSUMDB="${TOFU_TESTENV_GONOSUMDB:-}"
	export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
}

# build_tofu builds cmd/tofu in a throwaway module.
#
# `go install github.com/opentofu/opentofu/cmd/tofu@vX` refuses to build a
# module whose go.mod has replace directives, and OpenTofu's has one that
# matters: github.com/hashicorp/hcl/v2 => github.com/opentofu/hcl/v2 (a fork
# with OpenTofu's functions). Replace directives only apply in the main module,
# so the throwaway module requires OpenTofu and repeats every replace (and its
# godebug settings, which change TLS behaviour) read from OpenTofu's own go.mod.
build_tofu() {
	local out="$1" mod="${TOFU_DIR}/build"
	mkdir -p "$mod"
	rm -f "$mod/go.mod" "$mod/go.sum"
	log "building tofu ${TOFU_VERSION} in $mod; the first build downloads modules and takes about 10 minutes"
	local dl gomod
	if ! dl="$(cd "$mod" && go mod download -json "github.com/opentofu/opentofu@${TOFU_VERSION}")"; then
		printf '%s\n' "$dl" >&2
		die "downloading github.com/opentofu/opentofu@${TOFU_VERSION} from the module proxy failed"
	fi
	gomod="$(printf '%s\n' "$dl" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
	[ -f "$gomod" ] || die "go mod download did not report the go.mod of github.com/opentofu/opentofu@${TOFU_VERSION}"

	# Single-line `replace a v => b v` and the lines of `replace ( ... )` blocks.
	local replaces godebug goversion
	replaces="$(awk '
		/^replace[[:space:]]*\(/ {r=1; next}
		r && /^\)/ {r=0; next}
		r && NF {sub(/\/\/.*/, ""); if (NF) print; next}
		/^replace[[:space:]]/ {sub(/^replace[[:space:]]+/, ""); sub(/\/\/.*/, ""); print}
	' "$gomod")"
	printf '%s\n' "$replaces" | grep -q '^github.com/hashicorp/hcl/v2 ' ||
		die "found no replace of github.com/hashicorp/hcl/v2 in $gomod; has OpenTofu's go.mod changed?"
	godebug="$(awk '/^godebug[[:space:]]*\(/ {g=1; next} g && /^\)/ {g=0; next} g {sub(/\/\/.*/, ""); if (NF) print $1}' "$gomod")"
	goversion="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod" | head -n1)"
	{
		printf '// Throwaway module generated by scripts/tofu-testenv.sh to build tofu.\n'
		printf 'module routekeeper.local/tofu-build\n\ngo %s\n\n' "${goversion:-1.26.0}"
		if [ -n "$godebug" ]; then
			printf 'godebug (\n'
			printf '\t%s\n' $godebug
			printf ')\n\n'
		fi
		printf 'require github.com/opentofu/opentofu %s\n\nreplace (\n' "$TOFU_VERSION"
		printf '%s\n' "$replaces" | sed 's/^[[:space:]]*/\t/'
		printf ')\n'
	} >"$mod/go.mod"
	log "repeated $(printf '%s\n' "$replaces" | grep -c .) replace directive(s) from OpenTofu's go.mod"

	# version.dev=no drops the "-dev" suffix, so `tofu version` says the release.
	local ldflags="-s -w -X github.com/opentofu/opentofu/version.dev=no"
	local start=$SECONDS tmp="${out}.tmp.$$"
	(cd "$mod" && go build -trimpath -ldflags="$ldflags" -o "$tmp" github.com/opentofu/opentofu/cmd/tofu) >&2 ||
		{
			rm -f "$tmp"
			die "go build of tofu ${TOFU_VERSION} failed (module in $mod)"
		}
	mv -f "$tmp" "$out"
	log "built $out in $((SECONDS - start))s ($(du -h "$out" | cut -f1))"
}

# build_azurerm installs the provider with `go install module@version` (its
# go.mod has no replace directives, so no throwaway module is needed). The
# binary keeps its name, terraform-provider-azurerm, which dev_overrides needs.
build_azurerm() {
	local dir="$1"
	log "building terraform-provider-azurerm ${AZURERM_VERSION} into $dir; the first build takes about 15 minutes and 5 GB of build cache"
	local start=$SECONDS tmp="${dir}/.tmp.$$"
	mkdir -p "$tmp"
	# `go install pkg@version` ignores the current module; -mod=mod does not apply to it.
	(cd "$tmp" && GOFLAGS="-buildvcs=false" GOBIN="$tmp" go install -trimpath \
		"github.com/hashicorp/terraform-provider-azurerm@${AZURERM_VERSION}") >&2 ||
		{
			rm -rf "$tmp"
			die "go install of terraform-provider-azurerm@${AZURERM_VERSION} failed"
		}
	mv -f "$tmp/terraform-provider-azurerm" "$dir/terraform-provider-azurerm"
	rm -rf "$tmp"
	log "built $dir/terraform-provider-azurerm in $((SECONDS - start))s ($(du -h "$dir/terraform-provider-azurerm" | cut -f1))"
}

command -v go >/dev/null 2>&1 || die "go is not on PATH; it is needed to check and build tofu and the azurerm provider"
mkdir -p "$TOFU_DIR" "$AZURERM_DIR"

if [ "${TOFU_TESTENV_CHECK:-}" = 1 ]; then
	missing=0
	[ -n "${ROUTEKEEPER_TOFU:-}" ] || tofu_ok "${TOFU_DIR}/tofu" || { log "tofu ${TOFU_VERSION} is not cached"; missing=1; }
	[ -n "${ROUTEKEEPER_AZURERM:-}" ] || azurerm_ok "${AZURERM_DIR}/terraform-provider-azurerm" || { log "azurerm ${AZURERM_VERSION} is not cached"; missing=1; }
	[ "$missing" = 0 ] || exit 3
	exit 0
fi

# One build at a time per cache root: the two builds together need more memory
# and cores than a CI machine has, and a second caller waits, then finds the binaries.
exec 9>"$LOCK"
if command -v flock >/dev/null 2>&1; then
	flock 9 || die "could not lock $LOCK"
fi
go_env

if [ -n "${ROUTEKEEPER_TOFU:-}" ]; then
	tofu_ok "$ROUTEKEEPER_TOFU" || die "ROUTEKEEPER_TOFU=$ROUTEKEEPER_TOFU does not run or is not OpenTofu ${TOFU_VERSION}"
	TOFU_BIN="$ROUTEKEEPER_TOFU"
else
	TOFU_BIN="${TOFU_DIR}/tofu"
	if tofu_ok "$TOFU_BIN"; then
		log "tofu ${TOFU_VERSION} cached at $TOFU_BIN"
	else
		build_tofu "$TOFU_BIN"
		tofu_ok "$TOFU_BIN" || die "$TOFU_BIN was built but 'tofu version' does not print 'OpenTofu ${TOFU_VERSION}'"
	fi
fi

if [ -n "${ROUTEKEEPER_AZURERM:-}" ]; then
	azurerm_ok "$ROUTEKEEPER_AZURERM" || die "ROUTEKEEPER_AZURERM=$ROUTEKEEPER_AZURERM is not terraform-provider-azurerm ${AZURERM_VERSION}"
	AZURERM_BIN="$ROUTEKEEPER_AZURERM"
else
	AZURERM_BIN="${AZURERM_DIR}/terraform-provider-azurerm"
	if azurerm_ok "$AZURERM_BIN"; then
		log "terraform-provider-azurerm ${AZURERM_VERSION} cached at $AZURERM_BIN"
	else
		build_azurerm "$AZURERM_DIR"
		azurerm_ok "$AZURERM_BIN" || die "$AZURERM_BIN was built but its build info does not name terraform-provider-azurerm ${AZURERM_VERSION}"
	fi
fi
exec 9>&-

printf 'export ROUTEKEEPER_TOFU=%q\n' "$TOFU_BIN"
printf 'export ROUTEKEEPER_AZURERM=%q\n' "$AZURERM_BIN"
