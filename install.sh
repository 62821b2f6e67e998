#!/bin/sh
# Build premerge from this checkout, install the binary, then install its hooks into
# a repository.
#
#   ./install.sh                 install the binary; if run inside a git repository
#                                (other than this checkout), install the hooks there
#   ./install.sh REPO [ARGS...]  install the binary, then `premerge install --repo REPO ARGS...`
#   ./install.sh --no-hooks      install the binary only
#
# Re-running upgrades in place: the binary is rebuilt and replaced, and
# `premerge install` updates shims written by an older premerge.
#
# Environment: CARGO (default cargo), CARGO_INSTALL_ROOT / CARGO_HOME (where cargo
# installs: $CARGO_INSTALL_ROOT/bin, else $CARGO_HOME/bin, else ~/.cargo/bin).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cargo=${CARGO:-cargo}

hooks=yes
if [ "${1:-}" = "--no-hooks" ]; then
	hooks=no
	shift
fi

if ! command -v "$cargo" >/dev/null 2>&1; then
	echo "install.sh: cargo not found; install a Rust toolchain (https://rustup.rs) first" >&2
	exit 2
fi

if [ -n "${CARGO_INSTALL_ROOT:-}" ]; then
	dest_dir=$CARGO_INSTALL_ROOT/bin
else
	dest_dir=${CARGO_HOME:-$HOME/.cargo}/bin
fi
dest=$dest_dir/premerge

echo "install.sh: building and installing premerge from $here"
"$cargo" install --path "$here" --locked --force --quiet --profile dist
if [ ! -x "$dest" ]; then
	echo "install.sh: cargo finished but $dest is not there; check CARGO_INSTALL_ROOT / CARGO_HOME" >&2
	exit 2
fi
echo "install.sh: installed $dest ($("$dest" --version))"
case ":${PATH}:" in
*":$dest_dir:"*) ;;
*) echo "install.sh: note: $dest_dir is not on PATH; the hooks record the full path, but add it to PATH to run premerge by name" ;;
esac

[ "$hooks" = yes ] || exit 0

if [ $# -gt 0 ]; then
	repo=$1
	shift
	exec "$dest" install --repo "$repo" "$@"
fi

top=$(git rev-parse --show-toplevel 2>/dev/null) || top=
if [ -n "$top" ] && [ "$(cd "$top" && pwd)" != "$here" ]; then
	exec "$dest" install --repo "$top"
fi
echo "install.sh: no repository given; run 'premerge install' inside a repository to add the hooks"
