#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inner-loop quality on the CPUs users have, whatever machine this runs on: compiles each hot
# kernel (prefill tile, decode tile, the f16 and bf16 decode with their conversion, the int8
# tiles, the attention output's P.V tile) with its build's own compile command, cuts out its
# steady-state loop and asks llvm-mca how busy it keeps each core model's multiply-add pipes:
# the cycles the loop's multiply-adds alone need at the model's throughput, over the loop's
# predicted cycles per iteration. Prints one Markdown table per build: a row per loop, a column
# per core model.
#   usage: bench/mca.sh [host|aarch64|armv7]...   (default: all three; host must be x86-64)
#   needs cmake, ninja, llvm-mca (Debian's llvm-19; llvm-14 lacks the newer models), the cross g++
set -euo pipefail
cd "$(dirname "$0")/.."
mca=$(command -v llvm-mca-19 || command -v llvm-mca-14 || command -v llvm-mca) || {
  echo "needs llvm-mca: apt-get install llvm-19"
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints the instructions of kernel function $2's hot loop in assembly $1: of the spans from a
# label to a branch back to it, the one with the highest share of multiply-adds (instructions
# matching $3: the innermost; in a decode entry, the densest of its row-count instances).
inner_loop() {
  awk -v fn="$2" -v mac="$3" '
    $0 ~ "^" fn ":" { in_fn = 1; next }
    in_fn && /^\t\.size/ { in_fn = 0 }
    !in_fn { next }
    /^\.L[A-Za-z0-9_]+:/ { label[substr($1, 1, length($1) - 1)] = n; next }
    /^\t[a-z{]/ {
      line[++n] = $0
      if ($1 ~ /^(b\.|b[a-z][a-z]$|cbn?z|tbn?z|j[a-z]+$)/ && ($NF in label)) {
        fmas = 0
        for (i = label[$NF] + 1; i <= n; ++i) if (line[i] ~ "^\t([{]vex[}] )?(" mac ")[ \t.]") ++fmas
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
# block-reciprocal-throughput", or nothing when the model lacks the CPU or an instruction.
mca_figures() {
  "$mca" $2 -mcpu="$3" -iterations=500 "$1" 2>/dev/null |
    awk '/^Iterations:/ {it = $2} /^Total Cycles:/ {c = $3} /^Block RThroughput:/ {r = $3}
         END {if (it) printf "%.2f %s\n", c / it, r}'
}

presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(host aarch64 armv7)
for p in "${presets[@]}"; do
  # Per loop: its source under arch/, its level (the CMake object), the entry's suffix (none:
  # the prefill tile; _dec: the decode tile on raw K; _cdec: the key cache's decode; _pv: the
  # attention output's P.V tile),
  # the multiply-add, and the core models that lack the level's instructions (shown as "-":
  # llvm-mca would model them anyway). armv7 has no softmax row of its own, so no _pv loop.
  case $p in
    host)
      target="-mtriple=x86_64"
      cpus="haswell skylake-avx512 icelake-server sapphirerapids znver4 znver5"
      loops=("x86/qk_f32_avx2 avx2 - vfmadd231ps" "x86/qk_f32_avx2 avx2 _dec vfmadd231ps"
        "x86/qk_f16_avx2 avx2 _dec vfmadd231ps" "x86/qk_bf16_avx2 avx2 _dec vfmadd231ps"
        "x86/qk_f32_avx512 avx512 - vfmadd231ps haswell"
        "x86/qk_f32_avx512 avx512 _dec vfmadd231ps haswell"
        "x86/qk_f16_avx512 avx512 _dec vfmadd231ps haswell"
        "x86/qk_bf16_avx512 avx512 _dec vfmadd231ps haswell"
        "x86/qk_f32_avx2 avx2 _cdec vfmadd231ps" "x86/qk_f16_avx2 avx2 _cdec vfmadd231ps"
        "x86/qk_f32_avx512 avx512 _cdec vfmadd231ps haswell"
        "x86/qk_f16_avx512 avx512 _cdec vfmadd231ps haswell"
        "x86/qk_s8_avx512 avx512 - vpmaddwd haswell"
        "x86/qk_s8_avx512vnni avx512vnni - vpdpbusd haswell,skylake-avx512"
        "x86/qk_s8_avxvnni avxvnni - vpdpbusd haswell,skylake-avx512,icelake-server,znver4"
        "x86/qk_bf16_avx512bf16 avx512bf16 - vdpbf16ps haswell,skylake-avx512,icelake-server"
        "x86/softmax_f32_avx2 avx2 _pv vfmadd231ps"
        "x86/softmax_f32_avx512 avx512 _pv vfmadd231ps haswell")
      ;;
    aarch64)
      target="-mtriple=aarch64 -mattr=+dotprod,+i8mm,+bf16"
      cpus="cortex-a53 cortex-a55 cortex-a510 cortex-a76 cortex-a78 neoverse-n1 neoverse-n2"
      cpus+=" neoverse-v1 neoverse-v2"
      loops=("arm/qk_f32_neon neon - fmla" "arm/qk_f32_neon neon _dec fmla"
        "arm/qk_f16_neon neon _dec fmla" "arm/qk_bf16_neon neon _dec fmla"
        "arm/qk_s8_neon_dotprod neon_dotprod - sdot" "arm/qk_s8_neon_i8mm neon_i8mm - smmla"
        "arm/qk_bf16_neon_bf16 neon_bf16 - bfmmla cortex-a53,cortex-a55,cortex-a76,cortex-a78,neoverse-n1"
        "arm/softmax_f32_neon neon _pv fmla")
      ;;
    armv7)
      target="-mtriple=thumbv7a -mattr=+neon,+vfp4" cpus="cortex-a7 cortex-a15"
      loops=("arm/qk_f32_neon neon - vfma" "arm/qk_f32_neon neon _dec vfma")
      ;;
    *) echo "unknown preset $p (host, aarch64, armv7)" && exit 1 ;;
  esac
  if [ "$p" = host ] && [ "$(uname -m)" != x86_64 ]; then
    echo "host: not an x86-64 machine, skipped" && continue
  fi
  cmake --preset "$p" >/dev/null
  echo
  echo "### $p: multiply-add pipes busy (% of the model's issue rate) in each steady-state loop"
  echo
  printf '| loop |'
  for cpu in $cpus; do printf ' %s |' "$cpu"; done
  printf '\n|---|'
  for cpu in $cpus; do printf -- '---|'; done
  echo
  for l in "${loops[@]}"; do
    read -r src dir suffix mac lacking <<<"$l"
    [ "$suffix" = - ] && suffix=""
    # The build's own compile command for the kernel, turned into one that writes assembly.
    obj=arch/CMakeFiles/attnscore_arch_$dir.dir/$src.cpp.o
    cmd=$(ninja -C "build/$p" -t commands "$obj" | grep -F "$src.cpp" | tail -1) || true
    if [ -z "$cmd" ]; then
      echo "| \`$src\` ($dir) | not in this build |" && continue
    fi
    cmd=$(sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//; s/ -o [^ ]+ -c / -S -o OUT -c /' <<<"$cmd")
    base=$(basename "$src")
    (cd "build/$p" && ${cmd/OUT/$tmp/$base.s})
    # The kernel entry (the tile's template instances are inlined into it).
    # (qk_f32_8x32__avx512, or a tile-less row such as softmax_f32__avx512 and its _pv loop)
    prefix=$(sed -E 's/^([a-z]+_[a-z0-9]+)_.*/\1/' <<<"$base")
    tile="(_[0-9]+x[0-9]+(c[0-9]+)?)?"
    fn=$(grep -oE "^_ZN9attnscore[0-9]+${prefix}${tile}__${dir}${suffix}E[A-Za-z0-9_]*" \
      "$tmp/$base.s" | head -1)
    kernel=$(sed -E 's/^_ZN9attnscore[0-9]+([a-z0-9_]+)E.*/\1/' <<<"$fn")
    inner_loop "$tmp/$base.s" "$fn" "$mac" >"$tmp/loop.s"
    grep -E "^\s([{]vex[}] )?($mac)\>" "$tmp/loop.s" >"$tmp/mac.s" || true
    printf '| `%s` (%s %s, %s instr.) |' "$kernel" "$(wc -l <"$tmp/mac.s")" "$mac" \
      "$(wc -l <"$tmp/loop.s")"
    for cpu in $cpus; do
      if [[ ",${lacking:-}," == *",$cpu,"* ]]; then
        printf ' - |' && continue
      fi
      read -r cycles _ <<<"$(mca_figures "$tmp/loop.s" "$target" "$cpu")" || true
      read -r _ bound <<<"$(mca_figures "$tmp/mac.s" "$target" "$cpu")" || true
      if [ -z "${cycles:-}" ] || [ -z "${bound:-}" ]; then
        printf ' n/a |'
      else
        awk -v c="$cycles" -v b="$bound" 'BEGIN { printf " %.0f%% |", 100 * b / c }'
      fi
      cycles="" bound=""
    done
    echo
  done
done
