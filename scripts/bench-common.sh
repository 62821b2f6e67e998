# Shared set-up of the benchmark scripts (sourced, not run): the binary under test,
# a scratch directory removed on exit, and a hermetic git identity.
#
# PREMERGE_BIN names a binary to measure instead of building the release one.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${PREMERGE_BIN:-}" ]; then (cd "$ROOT" && cargo build --release --bin premerge >/dev/null); fi
BIN=${PREMERGE_BIN:-$TARGET/release/premerge}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
