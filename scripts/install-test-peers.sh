#!/usr/bin/env bash
# Installs the real syslog peers the integration tests run as local processes on loopback:
# util-linux logger, openssl, rsyslog (+gnutls, +relp: imrelp/omrelp) from Debian, and syslog-ng unpacked into
# $SYSLOG_NG_ROOT (it conflicts with rsyslog as a package). No service is started: the tests run
# every peer as their own process, never as the machine's system logger.
set -euo pipefail
SYSLOG_NG_ROOT=${SYSLOG_NG_ROOT:-/opt/intake-relay-test-peers/syslog-ng}
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
# Keep apt from starting rsyslog as a service.
if [ ! -x /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
fi
$SUDO apt-get update -qq
# syslog-ng-core's own dependencies install normally; only syslog-ng-core itself is unpacked.
$SUDO apt-get install -y -qq --no-install-recommends \
  bsdutils curl gcc libc6-dev openssl rsyslog rsyslog-gnutls rsyslog-relp systemd util-linux \
  libpcre3 libwrap0 libjson-c5 libglib2.0-0 libnet1 libivykis0 libcap2 libssl3 libsystemd0 >/dev/null
# gcc and libc6-dev above: `npm ci` builds the UDP input's native batched receive (native/compile.mjs,
# native/udp-recvmmsg.c); without them it falls back to dgram and its test fails.
# The Debian package's build (dpkg-shlibdeps) and its test (the man page rendered by man -l).
$SUDO apt-get install -y -qq --no-install-recommends dpkg-dev man-db groff-base >/dev/null
# promtool, for the monitoring test (rules, their unit tests, the metrics linter). The package's
# Prometheus service is not started (policy-rc.d above) and never used.
$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The image smoke test (test/integration/image.test.ts): tini-static, the image's PID 1 (the
# Dockerfile takes the same Debian 12 package); ip, to bring up loopback in its network namespace.
$SUDO apt-get install -y -qq --no-install-recommends tini iproute2 >/dev/null
# rsyslog's OpenSSL network stream driver (lmnsd_ossl): the benchmark's rsyslog comparison
# (`npm run bench -- tcp udp`) forwards over TLS with it, as the issue's figures were taken.
$SUDO apt-get install -y -qq --no-install-recommends rsyslog-openssl >/dev/null
# haproxy, the load balancer in front of the listeners in the PROXY protocol test (run by the test
# in the foreground with its own config; its service is never started: policy-rc.d above).
$SUDO apt-get install -y -qq --no-install-recommends haproxy >/dev/null
# logrotate, run by the file input's rotation tests as a local process with its own state file
# (copytruncate, compress and delaycompress as operators configure them); never the system's.
$SUDO apt-get install -y -qq --no-install-recommends logrotate >/dev/null
# A container engine: podman with runc (crun is refused by some hosts' cgroups), podman-compose for
# and docker-compose (which the compose test runs against podman's Docker API: podman-compose 1.0.3
# cannot run network_mode "service:..."), catatonit (the pause process of `podman kube play`),
# debootstrap for the base images (scripts/container-bases.sh: no registry is
# reachable). The tests build the image with it and run it through testcontainers (podman's Docker
# API, which test/helpers/engine.ts starts as its own process). containers.conf: runc; the host's
# network (no netavark/CNI setup needed); ulimits within the machine's hard limits (raising one is
# refused).
$SUDO apt-get install -y -qq --no-install-recommends podman runc catatonit podman-compose docker-compose debootstrap fuse-overlayfs >/dev/null
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[ "$nofile" = unlimited ] && nofile=16384; [ "$nproc" = unlimited ] && nproc=16384
[ "$nofile" -gt 16384 ] && nofile=16384; [ "$nproc" -gt 16384 ] && nproc=16384
$SUDO mkdir -p /etc/containers
printf '[containers]\nnetns = "host"\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n[engine]\nruntime = "runc"\n' \
  "$nofile" "$nofile" "$nproc" "$nproc" | $SUDO tee /etc/containers/containers.conf >/dev/null
if [ ! -x "$SYSLOG_NG_ROOT/usr/sbin/syslog-ng" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download syslog-ng-core >/dev/null)
  $SUDO mkdir -p "$SYSLOG_NG_ROOT"
  $SUDO dpkg -x "$tmp"/syslog-ng-core_*.deb "$SYSLOG_NG_ROOT"
  rm -rf "$tmp"
fi
LD_LIBRARY_PATH="$SYSLOG_NG_ROOT/usr/lib/syslog-ng" "$SYSLOG_NG_ROOT/usr/sbin/syslog-ng" --version | head -1
rsyslogd -v | head -1
logger --version
haproxy -v | head -1
logrotate --version 2>&1 | head -1
podman --version
