#!/bin/bash
# Makes the image the container tests run trials in, offline and
# idempotently: localhost/rung-test-busybox, a root file system holding
# Debian's busybox-static (/bin/busybox and links for the applets a shell
# loop uses), /tmp and an /etc/passwd, imported with `podman import`.
# Podman is driven as rung-worker's --container-arg options drive it here:
# runc and cgroupfs (crun fails on some hosts' cgroups). Exits 77, saying
# why, where podman cannot run a container on this machine.
set -u
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
IMAGE=localhost/rung-test-busybox
if ! command -v podman >/dev/null || ! command -v busybox >/dev/null; then
  echo "podman or busybox is not installed (scripts/deps.sh --tests installs them)"
  exit 77
fi
if ! "${PODMAN[@]}" image exists "$IMAGE" 2>/dev/null; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root/bin" "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for applet in sh cat echo sleep ls mkdir seq expr printf test true; do
    ln -sf busybox "$root/bin/$applet"
  done
  echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
  if ! tar -C "$root" -cf "$root.tar" . || ! "${PODMAN[@]}" import "$root.tar" "$IMAGE" >/dev/null 2>"$root.err"; then
    echo "podman import failed: $(tail -1 "$root.err" 2>/dev/null)"
    rm -f "$root.tar" "$root.err"
    exit 77
  fi
  rm -f "$root.tar" "$root.err"
fi
out=$("${PODMAN[@]}" run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
      "$IMAGE" /bin/sh -c 'echo ok' 2>&1)
if [ "$out" != "ok" ]; then
  echo "podman cannot run a container here: $(echo "$out" | tail -1)"
  exit 77
fi
echo "$IMAGE"
