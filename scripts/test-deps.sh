#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo:
# - the `localstripe` Stripe emulator (PyPI), used by the payment tests, which run it as
#   `python3 -m localstripe` (pip's console script is not on PATH in every Python set-up);
# - `nats-server` (Debian's package), which the JetStream tests start themselves on a free
#   port with a temporary store.
# Idempotent.
set -euo pipefail
python=${PYTHON:-python3}
if ! "$python" -c "import localstripe" 2>/dev/null; then
  echo "Installing localstripe."
  "$python" -m pip install --quiet --disable-pip-version-check localstripe
fi
"$python" -m localstripe --help >/dev/null || {
  echo "localstripe is installed but \`$python -m localstripe\` does not run" >&2
  exit 1
}
echo "localstripe: ready ($python -m localstripe)."

if ! command -v nats-server >/dev/null 2>&1; then
  echo "Installing nats-server."
  if [ "$(id -u)" -ne 0 ]; then
    echo "nats-server is missing and installing it needs root: apt-get install nats-server" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
fi
echo "nats-server: ready ($(nats-server --version))."
