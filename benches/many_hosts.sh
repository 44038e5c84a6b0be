#!/usr/bin/env bash
# Many hosts in bounded memory (`xlens hosts`): wall time, time per host and peak RSS of a first
# open (every host decoded and summarised) and a second open (summaries read from the Parquet
# cache), for
#   * 64 hosts made from the real two-host GPU session of ../shared/samples (clock offsets of up
#     to ±20 ms, 3% jitter, host017 a 1.25x straggler), and
#   * 256 hard links of one large profile (BIG, e.g. the ~200 MB, 5-million-event JAX profile
#     that `../shared/tools/gen/make_profiles.sh large` writes); skipped without it.
# Generated under $OUT (default /tmp/xlens-many-hosts), never committed.
#
#   [CARGO_PROFILE=dist] [JOBS=1] benches/many_hosts.sh [BIG.xplane.pb]
set -euo pipefail
cd "$(dirname "$0")/.."
BIG=${1:-}
OUT=${OUT:-/tmp/xlens-many-hosts}
# Hosts decoded at once: `auto` (xlens's own choice, from the memory bound) or a number.
JOBS=${JOBS:-auto}
jobs_arg=()
[ "$JOBS" = auto ] || jobs_arg=(--jobs "$JOBS")
# The Cargo profile built and measured (`dist` for figures to quote: fat LTO, one codegen unit).
PROFILE=${CARGO_PROFILE:-release}
cargo build --profile "$PROFILE" -q -p xlens --bin xlens --example many_hosts
T=$PWD/target/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")
X=$T/xlens
G=$T/examples/many_hosts
S=../shared/samples/xprof-testdata/logdir/plugins/profile/gpu_multi_worker
rm -rf "$OUT"
mkdir -p "$OUT"
export XLENS_CACHE_DIR=$OUT/cache

"$G" --hosts 64 --offset-ms 20 --jitter-pct 3 --slow 17:1.25 --seed 1 \
  --out "$OUT/h64/plugins/profile/gpu64" "$S"/*.xplane.pb >/dev/null
sessions=("64 $OUT/h64/plugins/profile/gpu64")
if [ -n "$BIG" ]; then
  "$G" --hosts 256 --link --out "$OUT/h256/plugins/profile/pod256" "$BIG" >/dev/null
  sessions+=("256 $OUT/h256/plugins/profile/pod256")
fi

# One open: prints "wall_s peak_rss_mb bound_mb" and keeps the JSON; the bound is twice the
# largest host file plus what the summaries hold, as `xlens hosts` states them on stderr.
open_once() {
  local dir=$1 json=$2
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$X" hosts "$dir" "${jobs_arg[@]}" --json --verbose >"$json" 2>"$OUT/log" || {
    cat "$OUT/log" >&2
    exit 1
  }
  local bound at_once
  at_once=$(sed -n 's/^xlens: \([0-9]*\) hosts\{0,1\}\((s)\)\{0,1\} at a time.*/\1/p' "$OUT/log")
  bound=$(sed -n 's/.*largest host file \([0-9.]*\) MB; the summaries hold \([0-9.]*\) MB.*/\1 \2/p' "$OUT/log" |
    awk '{printf "%.0f", 2 * $1 + $2}')
  awk -v b="${bound:-?}" -v j="${at_once:--}" '{printf "%s %.0f %s %s\n", $1, $2 / 1024, b, j}' "$OUT/time"
}

printf '%-6s %10s %8s %10s %11s %9s %16s %12s %9s\n' hosts "input MB" jobs "first s" "ms/host" "peak MB" "2xfile+summ MB" "second s" "peak MB"
for s in "${sessions[@]}"; do
  set -- $s
  n=$1 dir=$2
  mb=$(find "$dir" -name '*.xplane.pb' -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s / 1e6}')
  rm -rf "$XLENS_CACHE_DIR"
  read -r t1 m1 b1 j1 < <(open_once "$dir" "$OUT/first.json")
  read -r t2 m2 _ _ < <(open_once "$dir" "$OUT/second.json")
  cmp -s "$OUT/first.json" "$OUT/second.json" || { echo "second open differs from the first" >&2; exit 1; }
  per=$(awk -v t="$t1" -v n="$n" 'BEGIN {printf "%.0f", t / n * 1000}')
  printf '%-6s %10s %8s %10s %11s %9s %16s %12s %9s\n' "$n" "$mb" "$j1" "$t1" "$per" "$m1" "$b1" "$t2" "$m2"
  python3 - "$OUT/first.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["steps"] or {}
print("       read %d of %d host files; stragglers: %s" % (
    r["hosts_read"], r["host_files"],
    ", ".join("%s +%.1f%% (%s)" % (x["host"], x["mean_excess_percent"], x["category"])
              for x in s.get("stragglers", [])) or "none"))
EOF
done
