#!/usr/bin/env bash
# Build the multipath QUIC transport: fetch tquic 1.6.0 from crates.io, unpack
# it into the cache directory, apply patches/*.patch, link it as vendor/tquic
# and build the release binaries into the cache directory's target/.
#
#   transports/build.sh            # or: make transport
#   transports/build.sh --test     # then run the workspace's unit tests
#
# FALCON_TRANSPORT_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/falcon-transport)
# holds the patched source and the cargo target dir; a rebuild with unchanged
# patches and sources takes seconds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${FALCON_TRANSPORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/falcon-transport}"
version=1.6.0
mkdir -p "$cache"

# 1. the crate from crates.io, through cargo (a throwaway manifest that needs it)
fetch="$cache/fetch"
mkdir -p "$fetch/src"
cat > "$fetch/Cargo.toml" <<TOML
[package]
name = "falcon-tquic-fetch"
version = "0.0.0"
edition = "2021"
[workspace]
[dependencies]
tquic = { version = "=$version", default-features = false }
TOML
: > "$fetch/src/lib.rs"
cargo fetch --quiet --manifest-path "$fetch/Cargo.toml"
crate_file="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/tquic-$version.crate | head -n 1)"

# 2. unpack and patch, unless the stamp says this crate + patches are in place
src="$cache/tquic-$version"
stamp="$( (sha256sum "$crate_file"; cat "$here"/patches/*.patch | sha256sum) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$src/.falcon-patch-stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "transport: unpacking $(basename "$crate_file") and applying patches/" >&2
    rm -rf "$src" "$src.tmp"
    mkdir -p "$src.tmp"
    tar -xzf "$crate_file" -C "$src.tmp"
    for p in "$here"/patches/*.patch; do
        patch --quiet -p1 -d "$src.tmp/tquic-$version" < "$p"
    done
    mv "$src.tmp/tquic-$version" "$src"
    rmdir "$src.tmp"
    echo "$stamp" > "$src/.falcon-patch-stamp"
fi
mkdir -p "$here/vendor"
ln -sfn "$src" "$here/vendor/tquic"

# 3. build, and a self-signed certificate for the server (beside its binary)
target="$cache/target"
# upstream tquic's own warnings (cargo shows them: it is a path dependency) are left out
cargo build --release --manifest-path "$here/Cargo.toml" --target-dir "$target" \
    --message-format short 2>&1 | { grep --line-buffered -v -E '^vendor/tquic/|^warning: `tquic` \(lib\)' || true; }
release="$target/release"
if [ ! -s "$release/falcon-cert.pem" ] || [ ! -s "$release/falcon-key.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
        -subj /CN=falcon -keyout "$release/falcon-key.pem" -out "$release/falcon-cert.pem" 2> /dev/null
fi
echo "transport: binaries in $release" >&2
if [ "${1:-}" = "--test" ]; then
    cargo test --release --manifest-path "$here/Cargo.toml" --target-dir "$target" --workspace
fi
