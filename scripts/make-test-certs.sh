#!/usr/bin/env bash
# Regenerates the committed TLS test fixtures in test/fixtures/tls (test-only keys, valid 100 years).
set -euo pipefail
cd "$(dirname "$0")/../test/fixtures/tls"
days=36500
ext() { printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=%s\n' "$1" "$2"; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days $days -subj "/CN=intake-relay test CA" -keyout ca.key -out ca.crt 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days $days -subj "/CN=untrusted CA" -keyout other-ca.key -out other-ca.crt 2>/dev/null
issue() { # name cn eku san
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days $days -extfile <(ext "$3" "$4") -out "$1.crt" 2>/dev/null
  rm -f "$1.csr"
}
issue server localhost serverAuth "DNS:localhost,IP:127.0.0.1,IP:::1"
issue wrong-name wrong.example serverAuth "DNS:wrong.example"
issue client relay-client clientAuth "DNS:relay-client"
rm -f ca.srl other-ca.key
# syslog-ng wants cert and key in one directory layout; nothing else to do.
ls -1
