#!/usr/bin/env bash
# Time to solve a join challenge in real headless Chromium (docs/proof-of-work.md, its table):
# the waiting page's Web Worker at 12, 16, 18 and 20 bits.
#
#   scripts/solve-bench.sh          desktop-class: the worker as it runs
#   scripts/solve-bench.sh phone    phone-class: the worker's code on the page's main thread,
#                                   throttled 4x and 6x through Chromium's CPU throttling
#
# A measurement, not a test: it prints figures and asserts none (the browser test binary holds
# it as an ignored test, so the test command never runs it). Needs chromium and
# chromium-driver (scripts/test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-desktop}" in
  desktop) ;;
  phone) export WR_SOLVE_PLAN=phone ;;
  *) sed -n '2,11p' "$0"; exit 2 ;;
esac
exec cargo test --test browser -- --ignored time_to_solve --nocapture
