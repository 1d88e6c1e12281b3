#pragma once

// A self-signed serving certificate made in memory at startup, for a listener that must not
// serve plain HTTP off loopback and was given no certificate files (the console: issue 36,
// item 6). An ECDSA P-256 key and an X.509 v3 certificate valid for `days`, whose subject
// alternative names are `dns_names` (and 127.0.0.1), both as PEM. Clients that verify server
// certificates must be told to trust it; the API server's service proxy does not verify.
//
// Thread-safe (OpenSSL 3, no shared state).

#include <string>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::extender {

struct PemPair {
  std::string certificate;
  std::string key;
};

[[nodiscard]] common::Result<PemPair> SelfSignedCertificate(
    const std::vector<std::string>& dns_names, int days = 365);

}  // namespace taskgov::extender
