#!/usr/bin/env bash
# Throughput of `rigaudit rehash` against sha256sum, openssl dgst -sha256 and a plain sha2 loop,
# all in the same run over the same files (warm page cache):
#   - one file of 2 GiB (recorded as the engine package of a bench bundle);
#   - 83 files of 64 MiB (recorded, with full digests, as the 83 shards of a checkpoint).
# rigaudit's report must pass (every digest matches), so a fast wrong answer cannot score.
#
# Usage: benches/rehash.sh [REPS]   (env: BENCH_DIR, a scratch folder outside the repo, 7.3 GiB;
#        SINGLE_MIB and SHARD_MIB, SHARDS to shrink it for a quick look). Deletes its files at the end.
set -euo pipefail

reps="${1:-3}"
single_mib="${SINGLE_MIB:-2048}"
shard_mib="${SHARD_MIB:-64}"
shards="${SHARDS:-83}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${BENCH_DIR:-/tmp}/rigaudit-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"

echo "== building (release)" >&2
(cd "$repo" && cargo build --release --quiet && cargo bench --bench rehash_baseline --no-run --quiet 2>/dev/null)
rig="$CARGO_TARGET_DIR/release/rigaudit"
base="$(ls -t "$CARGO_TARGET_DIR"/release/deps/rehash_baseline-* 2>/dev/null | grep -v '\.d$' | head -n1)"
[ -x "$rig" ] && [ -x "$base" ] || { echo "build failed: $rig / $base" >&2; exit 2; }

echo "== making files in $work" >&2
mkdir -p "$work/shards"
head -c "$((single_mib << 20))" /dev/urandom > "$work/single.bin"
for i in $(seq 1 "$shards"); do
  head -c "$((shard_mib << 20))" /dev/urandom > "$(printf '%s/shards/model-%05d-of-%05d.safetensors' "$work" "$i" "$shards")"
done
shard_files=("$work"/shards/*.safetensors)
single_bytes=$(stat -c %s "$work/single.bin")
shard_bytes=$(cat "${shard_files[@]}" | wc -c)   # also warms the page cache
cat "$work/single.bin" > /dev/null

echo "== digests for the bench bundles (sha256sum)" >&2
single_digest=$(sha256sum "$work/single.bin" | cut -d' ' -f1)
(cd "$work/shards" && sha256sum ./*.safetensors) > "$work/shards.sha256"

python3 - "$repo" "$work" "$single_digest" <<'PY'
import hashlib, json, os, sys
repo, work, single = sys.argv[1], sys.argv[2], sys.argv[3]
card = json.load(open(os.path.join(repo, "fixtures/pages/tensorfold-127-stock-2x/card.json")))
card["engine"]["binary"] = None
card["nccl"] = None
files = []
for line in open(os.path.join(work, "shards.sha256")):
    d, p = line.split(None, 1)
    files.append({"path": p.strip().lstrip("*").removeprefix("./"), "sha256": d})
def bundle(name, edit):
    c = json.loads(json.dumps(card))
    edit(c)
    d = os.path.join(work, name)
    os.makedirs(d)
    body = json.dumps(c, indent=1).encode()
    open(os.path.join(d, "card.json"), "wb").write(body)
    m = {"format": "rigaudit-bundle/1", "id": name, "title": name,
         "setup": {"engine": "bench", "checkpoint": "bench", "hardware": "bench"},
         "files": [{"kind": "card", "path": "card.json", "sha256": hashlib.sha256(body).hexdigest(), "published": True}]}
    json.dump(m, open(os.path.join(d, "bundle.json"), "w"))
def single_edit(c):
    c["engine"]["package"] = {"file": "single.bin", "sha256": single}
    c["checkpoint"]["shards"] = None
    c["checkpoint"]["revision_file"] = None
def shards_edit(c):
    c["engine"]["package"] = None
    c["checkpoint"]["shards"] = len(files)
    c["checkpoint"]["revision_file"] = None
    c["checkpoint"]["files"] = files
bundle("bench-single", single_edit)
bundle("bench-shards", shards_edit)
PY

now() { date +%s.%N; }
# Every tool runs once per round, rounds repeat REPS times, so a change of load on this shared
# machine hits all tools alike; best and median seconds per tool are kept.
names=(); cmds=()
add() { names+=("$1"); shift; cmds+=("$(printf '%q ' "$@")"); }
add single.sha256sum  sha256sum "$work/single.bin"
add single.openssl    openssl dgst -sha256 "$work/single.bin"
add single.loop1      "$base" --threads 1 "$work/single.bin"
add single.rig1       "$rig" rehash "$work/bench-single" --file "package=$work/single.bin" --quiet --jobs 1
add single.rig        "$rig" rehash "$work/bench-single" --file "package=$work/single.bin" --quiet
add shards.sha256sum  sha256sum "${shard_files[@]}"
add shards.sha256sum2 bash -c 'printf "%s\0" "$@" | xargs -0 -P 2 -n 42 sha256sum' _ "${shard_files[@]}"
add shards.openssl    openssl dgst -sha256 "${shard_files[@]}"
add shards.loop1      "$base" --threads 1 "${shard_files[@]}"
add shards.loop2      "$base" --threads 2 "${shard_files[@]}"
add shards.rig1       "$rig" rehash "$work/bench-shards" --file "checkpoint=$work/shards" --quiet --jobs 1
add shards.rig        "$rig" rehash "$work/bench-shards" --file "checkpoint=$work/shards" --quiet

declare -A times best med
echo "== timing, $reps rounds, load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq 1 "$reps"); do
  for k in "${!names[@]}"; do
    t0=$(now)
    if ! eval "${cmds[$k]}" > "$work/out.${names[$k]}" 2>&1; then
      echo "FAILED: ${names[$k]}" >&2; tail -n 20 "$work/out.${names[$k]}" >&2; exit 1
    fi
    t1=$(now)
    times[${names[$k]}]+="$(echo "$t1 - $t0" | bc -l) "
  done
  echo "   round $round done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
for n in "${names[@]}"; do
  read -r b m < <(printf '%s\n' ${times[$n]} | sort -n | awk '{a[NR]=$1} END {printf "%.4f %.4f\n", a[1], a[int((NR+1)/2)]}')
  best[$n]=$b; med[$n]=$m
done
grep -q "matches the full digest" "$work/out.single.rig" || { echo "rigaudit did not verify the single file" >&2; cat "$work/out.single.rig" >&2; exit 1; }
grep -q "all $shards files match" "$work/out.shards.rig" || { echo "rigaudit did not verify the shards" >&2; cat "$work/out.shards.rig" >&2; exit 1; }
mem1=$("$base" --mem --threads 1 | sed 's/.*gbps=//')
mem2=$("$base" --mem --threads 2 | sed 's/.*gbps=//')

gbps() { echo "scale=4; $1 / ${best[$2]} / 1000000000" | bc -l; }
ratio() { echo "scale=3; ${best[$2]} / ${best[$1]}" | bc -l; }   # speed of $1 over $2, best runs
mratio() { echo "scale=3; ${med[$2]} / ${med[$1]}" | bc -l; }  # the same on medians

echo
echo "rigaudit rehash bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sha2 from memory (no reads): 1 thread $mem1 GB/s, 2 threads $mem2 GB/s"
printf '\n%-46s %10s %10s %9s\n' "one file of $single_mib MiB" "best s" "median s" "GB/s"
for k in sha256sum openssl loop1 rig1 rig; do
  n="single.$k"; printf '%-46s %10s %10s %9.3f\n' "$k" "${best[$n]}" "${med[$n]}" "$(gbps "$single_bytes" "$n")"
done
printf '\n%-46s %10s %10s %9s\n' "$shards files of $shard_mib MiB" "best s" "median s" "GB/s"
for k in sha256sum sha256sum2 openssl loop1 loop2 rig1 rig; do
  n="shards.$k"; printf '%-46s %10s %10s %9.3f\n' "$k" "${best[$n]}" "${med[$n]}" "$(gbps "$shard_bytes" "$n")"
done
echo
echo "ratios (throughput of rigaudit over the other, best runs):"
echo "  single: rig/sha256sum $(ratio single.rig single.sha256sum)  rig/openssl $(ratio single.rig single.openssl)  rig/sha2-loop-1-core $(ratio single.rig single.loop1)  rig-j1/sha2-loop-1-core $(ratio single.rig1 single.loop1)"
echo "  shards: rig/sha256sum $(ratio shards.rig shards.sha256sum)  rig/sha256sum-x2 $(ratio shards.rig shards.sha256sum2)  rig/openssl $(ratio shards.rig shards.openssl)  rig/sha2-loop-2-cores $(ratio shards.rig shards.loop2)  rig-j1/sha2-loop-1-core $(ratio shards.rig1 shards.loop1)"
echo "  medians: single rig/sha2-loop-1-core $(mratio single.rig single.loop1); shards rig/sha2-loop-2-cores $(mratio shards.rig shards.loop2)"
echo "  (goal: single rig/sha2-loop-1-core >= 0.95; shards rig/sha2-loop-2-cores >= 0.95)"
