#!/bin/sh
# A certificate authority and a server certificate it signed, made afresh for one test run, for the
# Messages API mock (tests/clients/README.md):
#
#   make_test_pki.sh DIR HOST
#
# writes DIR/ca.pem (what the client is told to trust, through NODE_EXTRA_CA_CERTS), DIR/server.pem
# and DIR/server.key (the mock's), for HOST and 127.0.0.1, valid for a day. The CA's key is removed
# once it has signed, so nothing else can be signed with it. A client that trusts ca.pem trusts
# only this run's mock: no certificate is shared between runs or kept in the repository.
set -eu
dir=$1
host=$2
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=tea-evaluate test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
  -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" \
  -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' \
  "$host" >"$dir/server.ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
  -CAcreateserial -days 1 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
rm -f "$dir/ca.key" "$dir/ca.srl" "$dir/server.csr" "$dir/server.ext"
# A confined client reads the CA as another user: the certificate is public.
chmod 644 "$dir/ca.pem"
