#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The footprint: builds the static library alone (Release) for x86-64, aarch64 and armv7 with the
# toolchain files, in build/size-<target>, strips a copy with the target's own strip
# (--strip-unneeded: what a program linking it keeps needs no more) and reports its size in
# total, per object file, per level and per dtype. Kernel objects are named qk_<dtype>_<level>,
# the others count as "core"; a core file whose name has a dtype token (f32, f16, s8, bf16)
# counts for that dtype, the rest as "common". Fails if the stripped aarch64 library is over
# the budget: 336 KiB with every dtype (f32, f16, bf16 and int8) and the attention output call,
# 320 KiB without the output call (-DATTNSCORE_ENABLE_OUTPUT=OFF); 256 KiB before bf16, whose
# NEON kernel alone is 27 KiB.
#   bash bench/size_report.sh [x86-64] [aarch64] [armv7] [-D<option>=<value> ...]
# e.g. bash bench/size_report.sh aarch64 -DATTNSCORE_ENABLE_NEON=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
# aarch64 budgets: 320 KiB for the scores library (-DATTNSCORE_ENABLE_OUTPUT=OFF), 336 KiB with
# the attention output call (the default), which adds about 20 KiB.
budget=$((336 * 1024))
targets=()
options=()
for arg in "$@"; do
  case $arg in
    -D*) options+=("$arg") ;;
    *) targets+=("$arg") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(x86-64 aarch64 armv7)
case " ${options[*]} " in *" -DATTNSCORE_ENABLE_OUTPUT=OFF "*) budget=$((320 * 1024)) ;; esac

pkgs=(cmake ninja-build g++ libxsimd-dev)
for target in "${targets[@]}"; do
  case $target in
    aarch64) pkgs+=(g++-aarch64-linux-gnu) ;;
    armv7) pkgs+=(g++-arm-linux-gnueabihf) ;;
  esac
done
bash .ci/deps "${pkgs[@]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary=()
status=0
for target in "${targets[@]}"; do
  case $target in
    x86-64) tools=""; toolchain=() ;;
    aarch64) tools=aarch64-linux-gnu-
      toolchain=(-DCMAKE_TOOLCHAIN_FILE="$PWD/toolchains/aarch64-linux-gnu.cmake") ;;
    armv7) tools=arm-linux-gnueabihf-
      toolchain=(-DCMAKE_TOOLCHAIN_FILE="$PWD/toolchains/armv7-linux-gnueabihf.cmake") ;;
    *) echo "unknown target: $target (x86-64, aarch64, armv7)" >&2; exit 2 ;;
  esac
  build=build/size-$target
  # -U first: options of an earlier run (-DATTNSCORE_ENABLE_...=OFF) must not stay in the cache.
  cmake -S . -B "$build" -G Ninja -U 'ATTNSCORE_*' -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DATTNSCORE_BUILD_TESTS=OFF -DATTNSCORE_BUILD_BENCH=OFF -DATTNSCORE_INSTALL=OFF \
    "${toolchain[@]}" "${options[@]}" >/dev/null
  cmake --build "$build" --target attnscore >/dev/null
  dir=$work/$target
  mkdir -p "$dir/objects"
  cp "$build/lib/libattnscore.a" "$dir/lib.a"
  "${tools}strip" --strip-unneeded "$dir/lib.a"
  total=$(stat -c %s "$dir/lib.a")
  # Extracting by name keeps one of two same-named members: every object must have its own name.
  dups=$("${tools}ar" t "$dir/lib.a" | sort | uniq -d)
  if [ -n "$dups" ]; then
    echo "$target: objects share a name (rename a source file): $dups" >&2
    exit 1
  fi
  (cd "$dir/objects" && "${tools}ar" x ../lib.a)

  echo
  echo "== $target: libattnscore.a stripped: $total bytes ($((total / 1024)) KiB)" \
    "${options[*]:+(${options[*]})}"
  printf '%-28s %-14s %-7s %9s %11s\n' object level dtype bytes "text+data"
  declare -A by_level=() by_dtype=()
  for obj in $(cd "$dir/objects" && ls | sort); do
    base=${obj%.o}
    base=${base%.*}  # qk_f32_neon.cpp.o -> qk_f32_neon
    if [[ $base =~ ^qk_([a-z0-9]+)_([a-z0-9_]+)$ ]]; then
      dtype=${BASH_REMATCH[1]}
      level=${BASH_REMATCH[2]}
    else
      level=core
      dtype=common
      if [[ $base =~ (^|_)(f32|f16|bf16|s8)(_|$) ]]; then dtype=${BASH_REMATCH[2]}; fi
    fi
    bytes=$(stat -c %s "$dir/objects/$obj")
    # Berkeley format: text data bss dec hex filename
    code=$("${tools}size" "$dir/objects/$obj" | awk 'NR == 2 { print $1 + $2 }')
    printf '%-28s %-14s %-7s %9d %11d\n' "$obj" "$level" "$dtype" "$bytes" "$code"
    by_level[$level]=$((${by_level[$level]:-0} + bytes))
    by_dtype[$dtype]=$((${by_dtype[$dtype]:-0} + bytes))
  done
  line="per level:"
  for k in $(printf '%s\n' "${!by_level[@]}" | sort); do line+=" $k ${by_level[$k]}"; done
  echo "$line"
  line="per dtype:"
  for k in $(printf '%s\n' "${!by_dtype[@]}" | sort); do line+=" $k ${by_dtype[$k]}"; done
  echo "$line   (object bytes; the archive adds its index and headers)"
  unset by_level by_dtype
  verdict=""
  if [ "$target" = aarch64 ]; then
    if [ "$total" -le "$budget" ]; then
      verdict=" (budget $((budget / 1024)) KiB: met)"
    else
      verdict=" (budget $((budget / 1024)) KiB: EXCEEDED)"
      status=1
    fi
  fi
  summary+=("$(printf '%-8s %8d bytes  %6.1f KiB%s' "$target" "$total" \
    "$(awk -v b="$total" 'BEGIN { print b / 1024 }')" "$verdict")")
done
echo
echo "== stripped static library"
printf '%s\n' "${summary[@]}"
exit $status
