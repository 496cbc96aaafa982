# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# Sourced by the CI scripts: `stage NAME COMMAND...` runs one stage under a banner and records
# its wall time; `stage_report TITLE` (from the EXIT trap) prints them, the stage that failed or
# was stopped included.
stage_times=()
stage_now=""
trap 'exit 130' INT  # so that the EXIT trap sees the signal's status
trap 'exit 143' TERM
stage() {
  stage_now=$1
  stage_start=$SECONDS
  shift
  echo "== $stage_now"
  "$@"
  stage_times+=("$(printf '  %-34s %6d s' "$stage_now" $((SECONDS - stage_start)))")
  stage_now=""
}
stage_report() {
  local rc=$?
  local took=$((SECONDS - ${stage_start:-0}))
  [ -z "$stage_now" ] ||
    stage_times+=("$(printf '  %-34s %6d s  (did not finish)' "$stage_now" "$took")")
  [ ${#stage_times[@]} -eq 0 ] || printf '== wall time by stage (%s, exit %d, %d s in all)\n%s\n' \
    "$1" "$rc" "$SECONDS" "$(printf '%s\n' "${stage_times[@]}")"
  return "$rc"
}
