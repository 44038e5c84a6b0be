#!/usr/bin/env bash
# Same answers: runs every tool of two xlens binaries on the same profiles and compares what they
# print, byte for byte (JSON, CSV and text; the exit code too). For refactors that must change
# nothing a user sees.
#
# Usage: benches/same_answers.sh OLD_XLENS NEW_XLENS [PATH...]
#   PATH: profiles or log dirs (default: fixtures/logdir as one log dir, each fixture host file,
#   fixtures/invalid, each PyTorch trace under fixtures/pytorch, and every .xplane.pb and
#   PyTorch trace (.json.gz) under ../shared/samples when it exists).
# The roofline tools get fixed peaks (--peak-flops/--peak-bw) so that CPU profiles do not depend
# on this machine's measured peak. Exits 1 when any output differs, and names each difference.
set -uo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: same_answers.sh OLD_XLENS NEW_XLENS [PATH...]}
new=${2:?usage: same_answers.sh OLD_XLENS NEW_XLENS [PATH...]}
shift 2
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  paths=(fixtures/logdir fixtures/invalid)
  while IFS= read -r f; do paths+=("$f"); done < <(find fixtures/logdir -name '*.xplane.pb*' | sort)
  while IFS= read -r f; do paths+=("$f"); done < <(find fixtures/pytorch -name '*.json*' | sort)
  if [ -d ../shared/samples ]; then
    while IFS= read -r f; do paths+=("$f"); done < <(find ../shared/samples -name '*.xplane.pb' | sort)
    while IFS= read -r f; do paths+=("$f"); done < <(find ../shared/samples/pytorch -name '*.json.gz' | sort)
  fi
fi
tools=$("$old" tools --json | python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)))')
# Extra parameter sets per tool, beyond the defaults (one set per line; empty line = defaults).
variants() {
  case "$1" in
    op_profile|hlo_stats) printf '%s\n' "--peak-flops 1e12 --peak-bw 1e11" ;;
    roofline_model) printf '%s\n' "--peak-flops 1e12 --peak-bw 1e11" "--peak-flops 1e12 --peak-bw 1e11 --step 2" ;;
    graph_viewer) printf '%s\n' "" "--op fusion" "--op dot --radius 1" ;;
    memory_viewer) printf '%s\n' "" "--module jit" "--memory-space 1" ;;
    trace_viewer) printf '%s\n' "" "--width 300" ;;
    *) printf '%s\n' "" ;;
  esac
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=0
diffs=0
for p in "${paths[@]}"; do
  for t in $tools; do
    while IFS= read -r v; do
      for fmt in json csv text; do
        # shellcheck disable=SC2086
        "$old" tool "$t" "$p" --format "$fmt" $v >"$tmp/old" 2>"$tmp/old.err"
        echo "exit $?" >>"$tmp/old"
        # shellcheck disable=SC2086
        "$new" tool "$t" "$p" --format "$fmt" $v >"$tmp/new" 2>"$tmp/new.err"
        echo "exit $?" >>"$tmp/new"
        runs=$((runs + 1))
        if ! cmp -s "$tmp/old" "$tmp/new" || ! cmp -s "$tmp/old.err" "$tmp/new.err"; then
          diffs=$((diffs + 1))
          echo "DIFFERS: $t $p --format $fmt $v"
          diff <(cat "$tmp/old" "$tmp/old.err") <(cat "$tmp/new" "$tmp/new.err") | head -8
        fi
      done
    done < <(variants "$t")
  done
done
echo "$runs tool runs compared, $diffs differ"
[ "$diffs" -eq 0 ]
