#!/usr/bin/env bash
# Mutation testing of the core packages with gremlins (github.com/go-gremlins/gremlins, pinned):
# how many deliberate mistakes the tests catch (efficacy = killed ÷ (killed + lived)) and how many
# mistakes any test runs at all (mutator coverage). Not in the default CI: it takes minutes.
#
#   bash bench/mutation.sh                 # every core package
#   bash bench/mutation.sh ./retry ./batch # some of them
#
# A package tested mostly through others (see INTEGRATION below) runs in gremlins' integration
# mode: every mutant runs the whole suite. Targets: efficacy ≥ 90 %, mutator coverage ≥ 80 %.
# The mutants judged equivalent (no behaviour can tell them apart) are listed in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.6.0
bin="$(go env GOPATH)/bin/gremlins"
if ! go version -m "$bin" 2>/dev/null | grep -q "mod[[:space:]]*github.com/go-gremlins/gremlins[[:space:]]*$version"; then
  go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi
packages=("$@")
if [ ${#packages[@]} -eq 0 ]; then
  packages=(./retry ./retry/transport ./retry/limit ./request ./batch ./auth)
fi
# Packages whose behaviour is mostly pinned by tests in other packages.
INTEGRATION=" "
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Cached test results would make gremlins time every mutant out: it times the first run.
export GOFLAGS=-count=1
printf '%-20s %8s %8s %8s %10s %10s\n' package killed lived "not cov." efficacy coverage
for p in "${packages[@]}"; do
  [ -d "$p" ] || continue
  mode=()
  case "$INTEGRATION" in *" $p "*) mode=(--integration) ;; esac
  log="$out/$(echo "$p" | tr '/.' '__').log"
  # -E '/': gremlins sees a package's files by their path below it, and would mutate the files of
  # its subpackages too (./retry would count retry/limit's): a path with a slash is a subpackage's.
  "$bin" unleash "${mode[@]}" -E / --workers 2 --timeout-coefficient 10 "$p" >"$log" 2>&1 || true
  get() { sed -n "s/.*$1: *\([0-9.]*\).*/\1/p" "$log" | tail -1; }
  printf '%-20s %8s %8s %8s %9s%% %9s%%\n' "$p" "$(get Killed)" "$(get Lived)" "$(get 'Not covered')" \
    "$(get 'Test efficacy')" "$(get 'Mutator coverage')"
  if [ -n "${MUTATION_VERBOSE:-}" ]; then grep -a -E 'LIVED' "$log" | sed 's/^ */    /'; fi
done
