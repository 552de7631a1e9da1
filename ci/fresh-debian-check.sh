#!/usr/bin/env bash
# Runs the README's two quick-start commands as a new user would: on a fresh Debian 12
# (debootstrap --variant=minbase bookworm) with nothing but this repository copied in and
# /usr/local/cuda bind-mounted when the host has it, as root. Run it before resolving an
# issue that touches the build or ci/install-deps.sh; it takes as long as a full build and
# test run plus the package installs (about an hour on the 2-core machines). Not part of
# .ci/run.
#   ci/fresh-debian-check.sh [CHROOT_DIR]   (default: /srv/loom-fresh-debian; made anew)
# Needs root and debootstrap (installed when missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="${1:-/srv/loom-fresh-debian}"
[ "$(id -u)" -eq 0 ] || { echo "fresh-debian-check: run as root" >&2; exit 1; }
command -v debootstrap >/dev/null || {
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap
}

unmount_all() {
  for m in usr/local/cuda dev proc; do
    if mountpoint -q "$root/$m"; then umount "$root/$m"; fi
  done
}
trap unmount_all EXIT
unmount_all
rm -rf "$root"
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
if [ -d /usr/local/cuda ]; then
  mkdir -p "$root/usr/local/cuda"
  mount --bind /usr/local/cuda "$root/usr/local/cuda"
fi
# The committed tree only, as a clone would have it.
mkdir -p "$root/root/loom"
git archive HEAD | tar -x -C "$root/root/loom"
chroot "$root" /bin/bash -c 'cd /root/loom && ci/main-job.sh && ci/test.sh'
echo "fresh-debian-check: both quick-start commands passed on a fresh Debian 12"
