#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The docs name everything a user can call, get back or set: fails, listing them, if a public
# function declared in lib/include/attnscore/attnscore.h, an ATTNSCORE_ERR_* status of its enum, or
# an environment variable the code reads (getenv in lib/, arch/, tests/, bench/) appears in no
# docs/*.md file (as a whole word).
set -euo pipefail
cd "$(dirname "$0")/.."
header=lib/include/attnscore/attnscore.h
shopt -s nullglob
docs=(docs/*.md)
[ ${#docs[@]} -gt 0 ] || { echo "check_docs: no docs/*.md" >&2; exit 1; }

# The header without its comments, so that only declarations and definitions are read.
code=$(perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g' "$header")

# Public functions: a name followed by "(" in the code is a declaration (the header calls
# nothing; function-pointer typedefs read "(*name)", which this does not match).
mapfile -t functions < <(grep -oE '\battnscore_[a-z0-9_]*[[:space:]]*\(' <<<"$code" |
  sed -E 's/[[:space:]]*\($//' | sort -u)
mapfile -t statuses < <(grep -oE '\bATTNSCORE_ERR_[A-Z0-9_]+[[:space:]]*=' <<<"$code" |
  sed -E 's/[[:space:]]*=$//' | sort -u)
mapfile -t variables < <(grep -rhoE 'getenv\("[A-Za-z0-9_]+"\)' lib arch tests bench |
  sed -E 's/^getenv\("//; s/"\)$//' | sort -u)

# Sanity: an empty list would mean the extraction broke, not that all is documented.
if [ ${#functions[@]} -eq 0 ] || [ ${#statuses[@]} -eq 0 ] || [ ${#variables[@]} -eq 0 ]; then
  echo "check_docs: found no functions, statuses or variables to check" >&2
  exit 1
fi

missing=()
check() {
  local kind=$1 name
  shift
  for name in "$@"; do
    grep -qw -- "$name" "${docs[@]}" || missing+=("$kind $name")
  done
}
check "function" "${functions[@]}"
check "status" "${statuses[@]}"
check "environment variable" "${variables[@]}"

if [ ${#missing[@]} -gt 0 ]; then
  echo "check_docs: ${#missing[@]} name(s) appear in no docs/*.md file:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "check_docs: ${#functions[@]} functions, ${#statuses[@]} statuses and" \
  "${#variables[@]} environment variables, each named in docs/"
