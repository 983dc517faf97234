#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo: the `localstripe` Stripe emulator
# (PyPI), used by the payment tests, which run it as `python3 -m localstripe` (pip's
# console script is not on PATH in every Python set-up). Idempotent.
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
