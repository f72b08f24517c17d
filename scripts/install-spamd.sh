#!/usr/bin/env bash
# Installs SpamAssassin's spamd and spamc (Debian packages) for the optional spamd connection
# of plan/spamc: its test starts spamd on 127.0.0.1 itself and skips, naming this script, only
# when spamd cannot be found. Offline: spamd runs with its shipped rules and -L (no network
# tests); no Bayes until trained.
#
# Usage: scripts/install-spamd.sh      (as root, or with sudo available)
set -euo pipefail

if command -v spamd >/dev/null 2>&1; then
  echo "spamd already installed: $(command -v spamd)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends spamd spamc >/dev/null
echo "installed: $(command -v spamd)"
