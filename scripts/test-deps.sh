#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo: the `localstripe` Stripe emulator
# (PyPI), used by the payment tests. Idempotent.
set -euo pipefail
if ! python3 -c "import localstripe" 2>/dev/null; then
  echo "Installing localstripe."
  python3 -m pip install --quiet --disable-pip-version-check localstripe
fi
command -v localstripe >/dev/null 2>&1 || {
  echo "localstripe is installed but not on PATH" >&2
  exit 1
}
