#!/usr/bin/env bash
# Regenerates the TLS test certificates in this directory (run once; the PEM files are committed).
# Two independent CAs with EC P-256 keys, every certificate valid for 100 years:
#   ca.pem            "taskgov test CA"          — signs server.pem and client.pem
#   server.pem        CN=taskgov-extender, SAN IP:127.0.0.1, IP:::1, DNS:localhost
#   client.pem        CN=kube-scheduler, clientAuth
#   other_ca.pem      "taskgov other test CA"    — signs other_server.pem and other_client.pem
#   other_server.pem  the same SANs as server.pem, from the other CA (certificate rotation tests)
#   other_client.pem  CN=kube-scheduler from the other CA (mTLS must reject it)
set -euo pipefail
cd "$(dirname "$0")"
days=36500
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {  # name subject
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days "$days" -subj "/O=taskgov/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem"
}
leaf() {  # name ca subject extensions
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/O=taskgov/CN=$3" -out "$1.csr"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" "$4" \
    >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -sha256 \
    -days "$days" -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
server_ext=$'extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost'
client_ext="extendedKeyUsage=clientAuth"
ca ca "taskgov test CA"
ca other_ca "taskgov other test CA"
leaf server ca taskgov-extender "$server_ext"
leaf client ca kube-scheduler "$client_ext"
leaf other_server other_ca taskgov-extender "$server_ext"
leaf other_client other_ca kube-scheduler "$client_ext"
rm -f ./*.srl
