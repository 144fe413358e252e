#!/usr/bin/env bash
# Benchmark script (not a test): xt-stream Triad vs a plain compiler-built triad loop (and an
# optional upstream STREAM binary), and xt-impactb ping-pong latency vs a plain MPI ping-pong,
# all built with the same flags and run alternately in one session, best/median of --repeat.
# Writes results/bench/<timestamp>.json and results/bench/latest.md.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/compare/run.sh [options]
  --size N               STREAM elements per array (default 80000000, as the upstream fixture)
  --ntimes N             STREAM iterations (default 20)
  --threads "1 2"        OpenMP thread counts to run (default "1 2")
  --repeat N             alternating repetitions of every measurement (default 3)
  --count N              ping-pong exchanges (default 2000)
  --cflags FLAGS         compiler flags for all builds (default "-O3 -march=native")
  --upstream-stream PATH upstream STREAM binary built by you with the same size and flags
  --out DIR              output directory (default results/bench)
USAGE
}
die() { echo "run.sh: $1: $2" >&2; exit 2; }
posint() { [[ $2 =~ ^[1-9][0-9]{0,9}$ ]] || die "$1" "expected a positive integer, got '$2'"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
size=80000000 ntimes=20 threads="1 2" repeat=3 count=2000 cflags="-O3 -march=native"
upstream="" out="$repo/results/bench"
while (($#)); do
  case $1 in
    --help|-h) usage; exit 0 ;;
    --size|--ntimes|--threads|--repeat|--count|--cflags|--upstream-stream|--out)
      (($# >= 2)) || die "$1" "missing value"
      case $1 in
        --size) posint "$1" "$2"; size=$2 ;;
        --ntimes) posint "$1" "$2"; ((10#$2 >= 2)) || die "$1" "must be at least 2"; ntimes=$2 ;;
        --threads) [[ $2 =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] \
                     || die "$1" "expected space-separated positive integers, got '$2'"; threads=$2 ;;
        --repeat) posint "$1" "$2"; repeat=$2 ;;
        --count) posint "$1" "$2"; count=$2 ;;
        --cflags) cflags=$2 ;;
        --upstream-stream) [[ -x $2 ]] || die "$1" "not an executable file: '$2'"; upstream=$2 ;;
        --out) out=$2 ;;
      esac
      shift 2 ;;
    *) die "$1" "unknown option (see --help)" ;;
  esac
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mpi_yield_when_idle=1

build="$repo/build/bench-compare"
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
read -r -a flags <<<"$cflags"
echo "building with: $cflags" >&2
cmake -S "$repo/bench" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="$cflags" >/dev/null
cmake --build "$build" -j2 >/dev/null
mpicc "${flags[@]}" -fopenmp "$here/plain_triad.c" -o "$build/plain_triad"
mpicc "${flags[@]}" "$here/plain_pingpong.c" -o "$build/plain_pingpong"

for t in $threads; do
  for ((r = 1; r <= repeat; r++)); do
    echo "stream: threads $t, repeat $r/$repeat" >&2
    OMP_NUM_THREADS=$t "$build/xt-stream" --size "$size" --ntimes "$ntimes" --no-samples \
      | grep '"metric":"triad","value":[^,]*,"unit":"MB/s","stat":"best"' >>"$raw/xt_triad_$t"
    OMP_NUM_THREADS=$t "$build/plain_triad" "$size" "$ntimes" >>"$raw/plain_triad_$t"
    if [[ -n $upstream ]]; then
      OMP_NUM_THREADS=$t "$upstream" | awk '/^Triad:/ {print $2}' >>"$raw/upstream_triad_$t"
    fi
  done
done
for ((r = 1; r <= repeat; r++)); do
  echo "ping-pong: repeat $r/$repeat" >&2
  mpirun --oversubscribe -np 2 "$build/xt-impactb" --interval 0 --count "$count" --no-samples \
    | grep '"stat":"median"' >>"$raw/xt_pingpong"
  mpirun --oversubscribe -np 2 "$build/plain_pingpong" 1024 "$count" >>"$raw/plain_pingpong"
done

mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$raw" "$out" "$stamp" "$commit" "$cflags" "$size" "$ntimes" "$count" "$threads" \
  "${upstream:+$upstream}" <<'PY'
import json, os, sys
raw, out, stamp, commit, cflags, size, ntimes, count, threads, *up = sys.argv[1:]
def lines(name):
    path = os.path.join(raw, name)
    return open(path).read().split() if os.path.exists(path) else []
def jl(name, key):
    with open(os.path.join(raw, name)) as f:
        return [json.loads(l)[key] for l in f if l.strip()]
rep = {"timestamp": stamp, "git_commit": commit, "host": os.uname().nodename, "cflags": cflags,
       "stream": [], "pingpong": {}, "upstream_stream": up[0] if up else None}
md = [f"# bench/compare {stamp} (commit {commit}, flags `{cflags}`)", "",
      f"STREAM Triad best, MB/s, {size} elements, ntimes {ntimes} (best of repeats; all runs in JSON)", "",
      "| threads | xt-stream | plain loop | upstream STREAM | xt / plain |", "|---|---|---|---|---|"]
for t in threads.split():
    xt, plain = jl(f"xt_triad_{t}", "value"), jl(f"plain_triad_{t}", "best_mbs")
    upv = [float(v) for v in lines(f"upstream_triad_{t}")]
    rep["stream"].append({"threads": int(t), "elements": int(size), "ntimes": int(ntimes),
                          "xt_triad_best_mbs": xt, "plain_triad_best_mbs": plain,
                          "upstream_triad_best_mbs": upv})
    md.append(f"| {t} | {max(xt):.0f} | {max(plain):.0f} | "
              f"{max(upv):.0f} | " if upv else f"| {t} | {max(xt):.0f} | {max(plain):.0f} | - | ")
    md[-1] += f"{max(xt) / max(plain):.3f} |"
xp, pp = jl("xt_pingpong", "value"), jl("plain_pingpong", "median_us")
rep["pingpong"] = {"bytes": 1024, "count": int(count), "xt_impactb_median_us": xp,
                   "plain_median_us": pp}
md += ["", f"Ping-pong half RTT, 1 KiB, {count} exchanges, median us (best of repeats)", "",
       "| xt-impactb --interval 0 | plain MPI | xt / plain |", "|---|---|---|",
       f"| {min(xp):.2f} | {min(pp):.2f} | {min(xp) / min(pp):.3f} |"]
with open(os.path.join(out, f"{stamp}.json"), "w") as f:
    json.dump(rep, f, indent=1)
with open(os.path.join(out, "latest.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))
print(f"\nwrote {os.path.join(out, stamp + '.json')}", file=sys.stderr)
PY
