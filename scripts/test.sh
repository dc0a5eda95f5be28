#!/usr/bin/env bash
# The test command: installs what the tests need when it is missing (redis-server for the
# store, push and multi-instance tests; Chromium and chromedriver for the browser tests; nginx
# for the edge tests of deploy/; Python and Node for the shop's origin and the CDN worker), then
# runs every test of the workspace: the server and the clients (client/). Debian/Ubuntu; run as
# root or with sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx)
# The shop's origin behind gateway mode is a Python script; the CDN worker's pass check runs
# in Node.
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v node >/dev/null 2>&1 || need+=(nodejs)
# The alert rules' unit tests run in Prometheus's promtool.
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

redis-server --version
cargo --version
cargo test --workspace "$@"
