#!/usr/bin/env bash
# Makes the Dockerfile's two base images from Debian's packages, for machines that reach no image
# registry (the tests build the image with them), and tags them:
#   localhost/intake-relay-base/build:24-bookworm     Debian 12 (debootstrap minbase) with Node.js 24
#       (the binary of the project's `node` devDependency) and npm at /usr/local, as the official
#       node:24-bookworm-slim lays them out: the build stage's stand-in.
#   localhost/intake-relay-base/runtime:cc-debian12    libc6, libgcc-s1, libstdc++6, ca-certificates
#       (the bundle made as update-ca-certificates makes it), tzdata and netbase unpacked, /etc/passwd
#       with root and nonroot, /tmp: distroless/cc-debian12's stand-in.
# Then: podman build --build-arg BUILD_IMAGE=localhost/intake-relay-base/build:24-bookworm \
#         --build-arg RUNTIME_IMAGE=localhost/intake-relay-base/runtime:cc-debian12 -t intake-relay .
# An image that exists already is kept (--force makes both again). Needs root, podman, debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=localhost/intake-relay-base/build:24-bookworm
RUNTIME=localhost/intake-relay-base/runtime:cc-debian12
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
force=${1:-}
have() { [ "$force" != --force ] && podman image exists "$1"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! have "$BUILD"; then
  node_bin=$(ls node_modules/node/node_modules/node-linux-*/bin/node 2>/dev/null | head -1)
  [ -x "$node_bin" ] || { echo "container-bases: run npm ci first (the node devDependency gives Node.js 24)" >&2; exit 1; }
  npm_dir=$(npm root -g)/npm
  [ -d "$npm_dir" ] || { echo "container-bases: no npm at $npm_dir" >&2; exit 1; }
  root="$work/build"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >/dev/null
  # As node:24-bookworm-slim: node and npm under /usr/local, apt ready for the build's own packages.
  install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
  tar -C "$root" -c . | podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["node"]' - "$BUILD" >/dev/null
  echo "container-bases: $BUILD ($("$node_bin" --version), npm $(node "$npm_dir/bin/npm-cli.js" --version 2>/dev/null || echo '?'))"
fi

if ! have "$RUNTIME"; then
  root="$work/runtime"
  mkdir -p "$root" "$work/debs"
  (cd "$work/debs" && apt-get download libc6 libgcc-s1 libstdc++6 ca-certificates tzdata netbase >/dev/null)
  for deb in "$work/debs"/*.deb; do dpkg -x "$deb" "$root"; done
  # What update-ca-certificates would have made: one bundle of the certificates the package ships.
  mkdir -p "$root/etc/ssl/certs"
  cat "$root"/usr/share/ca-certificates/mozilla/*.crt > "$root/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > "$root/etc/group"
  mkdir -p "$root/tmp" "$root/home/nonroot" "$root/root"
  chmod 1777 "$root/tmp"
  tar -C "$root" -c . | podman import - "$RUNTIME" >/dev/null
  echo "container-bases: $RUNTIME"
fi
