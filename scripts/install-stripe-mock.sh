#!/usr/bin/env bash
# Installs stripe-mock, Stripe's own mock of its API, used by the billing tests
# (billing/stripe). The tests start it on 127.0.0.1 themselves and skip, with a
# message naming this script, only when the binary is absent.
#
# Usage: scripts/install-stripe-mock.sh
set -euo pipefail

VERSION="v0.203.0"
BIN_DIR="$(go env GOPATH)/bin"

if command -v stripe-mock >/dev/null 2>&1; then
  echo "stripe-mock already in PATH: $(command -v stripe-mock)"
  exit 0
fi
if [ -x "${BIN_DIR}/stripe-mock" ]; then
  echo "stripe-mock already installed: ${BIN_DIR}/stripe-mock"
  exit 0
fi

echo "installing github.com/stripe/stripe-mock@${VERSION} into ${BIN_DIR}"
# GOFLAGS is cleared so that a -mod setting meant for this repository does not
# apply to the install, which resolves stripe-mock's own module graph.
GOFLAGS= go install "github.com/stripe/stripe-mock@${VERSION}"
echo "installed: ${BIN_DIR}/stripe-mock"
