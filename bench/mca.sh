#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inner-loop quality without hardware: compiles each ARM micro-kernel (f32; on aarch64 also the
# int8 sdot and smmla ones) with the cross build's own compile command, cuts out its steady-state
# loop and asks llvm-mca (Debian's llvm-14) how busy it keeps a core's multiply-add pipes: the
# cycles the loop's multiply-adds alone need (the model's throughput) over the loop's predicted
# cycles per iteration.
#   usage: bench/mca.sh [aarch64|armv7]...     (default: both; needs cmake, ninja, the cross g++)
set -euo pipefail
cd "$(dirname "$0")/.."
mca=$(command -v llvm-mca-14 || command -v llvm-mca) || {
  echo "needs llvm-mca: apt-get install llvm-14"
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints the instructions of kernel function $2's hot loop in assembly $1: of the spans from a
# label to a branch back to it, the one with the highest share of multiply-adds (instructions
# matching $3: the innermost).
inner_loop() {
  awk -v fn="$2" -v mac="$3" '
    $0 ~ "^" fn ":" { in_fn = 1; next }
    in_fn && /^\t\.size/ { in_fn = 0 }
    !in_fn { next }
    /^\.L[A-Za-z0-9_]+:/ { label[substr($1, 1, length($1) - 1)] = n; next }
    /^\t[a-z]/ {
      line[++n] = $0
      if ($1 ~ /^(b\.|b[a-z][a-z]$|cbn?z|tbn?z)/ && ($NF in label)) {
        fmas = 0
        for (i = label[$NF] + 1; i <= n; ++i) if (line[i] ~ "^\t(" mac ")[ \t.]") ++fmas
        if (fmas >= 4 && fmas / (n - label[$NF]) > best) {
          best = fmas / (n - label[$NF]); from = label[$NF] + 1; to = n
          for (i = from; i <= to; ++i) out[i] = line[i]
        }
      }
    }
    END { for (i = from; i <= to; ++i) print out[i] }
  ' "$1"
}

# $1: assembly file; $2: llvm-mca target options; $3: CPU. Prints "cycles-per-iteration
# block-reciprocal-throughput", or nothing when LLVM has no scheduling model for the CPU.
mca_figures() {
  "$mca" $2 -mcpu="$3" -iterations=500 "$1" 2>/dev/null |
    awk '/^Iterations:/ {it = $2} /^Total Cycles:/ {c = $3} /^Block RThroughput:/ {r = $3}
         END {if (it) printf "%.2f %s\n", c / it, r}'
}

presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(aarch64 armv7)
for p in "${presets[@]}"; do
  # Per kernel: its source (arch/arm/), its CMake object directory, the multiply-add.
  case $p in
    aarch64)
      target="-mtriple=aarch64 -mattr=+dotprod,+i8mm" cpus="cortex-a55 cortex-a76"
      kernels=("qk_f32_neon neon fmla" "qk_s8_neon_dotprod neon_dotprod sdot"
        "qk_s8_neon_i8mm neon_i8mm smmla")
      ;;
    armv7)
      target="-mtriple=thumbv7a -mattr=+neon,+vfp4" cpus="cortex-a7 cortex-a15"
      kernels=("qk_f32_neon neon vfma")
      ;;
    *) echo "unknown preset $p (aarch64, armv7)" && exit 1 ;;
  esac
  cmake --preset "$p" >/dev/null
  for k in "${kernels[@]}"; do
    read -r src dir mac <<<"$k"
    # The build's own compile command for the kernel, turned into one that writes assembly.
    obj=arch/CMakeFiles/attnscore_arch_$dir.dir/arm/$src.cpp.o
    cmd=$(ninja -C "build/$p" -t commands "$obj" | grep -F "arm/$src.cpp" | tail -1)
    cmd=$(sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//; s/ -o [^ ]+ -c / -S -o OUT -c /' <<<"$cmd")
    (cd "build/$p" && ${cmd/OUT/$tmp/$src.s})
    # The kernel entry (the tile's template instances are inlined into it).
    fn=$(grep -oE '^_ZN9attnscore[0-9]+qk_(f32|s8)_[0-9]+x[0-9]+(c[0-9]+)?__'"$dir"'E[A-Za-z0-9_]*' \
      "$tmp/$src.s" | head -1)
    kernel=$(sed -E 's/^_ZN9attnscore[0-9]+(qk_[a-z0-9]+_[0-9x]+(c[0-9]+)?__[a-z0-9_]+)E.*/\1/' <<<"$fn")
    inner_loop "$tmp/$src.s" "$fn" "$mac" >"$tmp/loop.s"
    grep -E "^\s($mac)\>" "$tmp/loop.s" >"$tmp/mac.s" || true
    echo "== $kernel ($p): steady-state loop of $(wc -l <"$tmp/loop.s") instructions," \
      "$(wc -l <"$tmp/mac.s") $mac, $(grep -cE '\bsp\b' "$tmp/loop.s" || true) stack accesses"
    for cpu in $cpus; do
      read -r cycles _ <<<"$(mca_figures "$tmp/loop.s" "$target" "$cpu")" || true
      read -r _ bound <<<"$(mca_figures "$tmp/mac.s" "$target" "$cpu")" || true
      if [ -z "${cycles:-}" ] || [ -z "${bound:-}" ]; then
        printf '  %-11s no llvm-mca scheduling model for this CPU in this LLVM\n' "$cpu"
        continue
      fi
      awk -v c="$cycles" -v b="$bound" -v cpu="$cpu" -v mac="$mac" 'BEGIN {
        printf "  %-11s %6.2f cycles per iteration, %s-port bound %6.2f: %s pipes %5.1f%% busy\n",
               cpu, c, mac, b, mac, 100 * b / c }'
      cycles="" bound=""
    done
  done
done
