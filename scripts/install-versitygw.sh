#!/usr/bin/env bash
# Installs the versitygw S3-compatible server used by the object_store_compatible
# provider tests (providers/s3). The tests start it on 127.0.0.1 themselves and
# skip, with a message naming this script, only when the binary is absent.
#
# Usage: scripts/install-versitygw.sh      (about 95 s on a cold module cache)
set -euo pipefail

VERSION="v1.8.0"
BIN_DIR="$(go env GOPATH)/bin"

if command -v versitygw >/dev/null 2>&1; then
  echo "versitygw already in PATH: $(command -v versitygw)"
  exit 0
fi
if [ -x "${BIN_DIR}/versitygw" ]; then
  echo "versitygw already installed: ${BIN_DIR}/versitygw"
  exit 0
fi

echo "installing github.com/versity/versitygw/cmd/versitygw@${VERSION} into ${BIN_DIR}"
# GOFLAGS is cleared so that a -mod setting meant for this repository does not
# apply to the install, which resolves versitygw's own module graph.
GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@${VERSION}"
echo "installed: ${BIN_DIR}/versitygw"
