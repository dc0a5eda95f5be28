#!/usr/bin/env bash
# The test command: installs what the tests need when it is missing (redis-server for the
# store, push and multi-instance tests; Chromium and chromedriver for the browser tests; nginx
# for the edge tests of deploy/; Python and Node for the shop's origin and the CDN worker;
# Schemathesis, the API fuzzer the OpenAPI document is checked with; the Python libraries the
# notification tests check against; axe-core, the accessibility checker the browser tests run
# in Chromium), checks the formatting
# (`cargo fmt --check`) and the lints (`cargo clippy -D warnings`), then runs every test of the
# workspace: the server and the clients (client/). Debian/Ubuntu; run as root or with sudo
# available.
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
# axe-core, the accessibility checker the browser tests run, comes from the npm registry.
command -v npm >/dev/null 2>&1 || need+=(npm)
# The alert rules' unit tests run in Prometheus's promtool.
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# Schemathesis goes into a virtualenv of its own, which Debian's Python makes only with
# python3-venv (ensurepip).
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# tests/api/openapi/fuzz.rs runs Schemathesis against /openapi.json: a pinned version, from
# PyPI into target/schemathesis (a virtualenv: nothing installed system-wide, nothing in the
# way of the system's Python packages), installed again only when the version changes.
SCHEMATHESIS_VERSION=4.32.5
st=target/schemathesis/bin/st
if ! "$st" --version 2>/dev/null | grep -qx "st, version $SCHEMATHESIS_VERSION"; then
  echo "installing: schemathesis $SCHEMATHESIS_VERSION (target/schemathesis)"
  rm -rf target/schemathesis
  python3 -m venv target/schemathesis
  target/schemathesis/bin/pip install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

# tests/api/notify runs a push service and a webhook receiver written against independent
# implementations: RFC 8291 decryption and JOSE from PyPI, pinned, in a virtualenv of their own
# (target/notify-python), installed again only when a pin changes.
NOTIFY_PYTHON_PINS="http-ece==1.2.1 PyJWT==2.15.1 cryptography==50.0.2"
notify_py=target/notify-python
if [ "$(cat "$notify_py/pins" 2>/dev/null)" != "$NOTIFY_PYTHON_PINS" ]; then
  echo "installing: $NOTIFY_PYTHON_PINS ($notify_py)"
  rm -rf "$notify_py"
  python3 -m venv "$notify_py"
  # shellcheck disable=SC2086 # the pins are words
  "$notify_py/bin/pip" install -q --disable-pip-version-check $NOTIFY_PYTHON_PINS
  echo "$NOTIFY_PYTHON_PINS" >"$notify_py/pins"
fi

# tests/browser/accessibility.rs runs axe-core (the accessibility checker, from the npm
# registry) inside Chromium on the fan pages: a 4.x release into target/axe, installed only
# when missing.
axe=target/axe/node_modules/axe-core/axe.min.js
if [ ! -f "$axe" ]; then
  echo "installing: axe-core@4 (target/axe)"
  npm install --silent --no-audit --no-fund --prefix target/axe axe-core@4
fi

redis-server --version
"$st" --version
cargo --version
# The house's habits, before any test: formatted code, and no lint (the workspace's `[lints]`
# and clippy's) left standing.
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace "$@"
