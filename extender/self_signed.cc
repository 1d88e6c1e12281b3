#include "extender/self_signed.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <functional>
#include <memory>

namespace taskgov::extender {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Names = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, GENERAL_NAMES_free>>;

common::Error OpenSslError(const std::string& what) {
  const unsigned long code = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return common::Error{"self-signed certificate: " + what + ": " + text};
}

std::string Pem(const std::function<int(BIO*)>& write) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) return "";
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int): OpenSSL's type
  return std::string(data, static_cast<size_t>(n));
}

// The subject alternative names: each DNS name, and 127.0.0.1.
bool AddAltNames(X509* cert, const std::vector<std::string>& dns_names) {
  Names names(GENERAL_NAMES_new());
  for (const std::string& dns : dns_names) {
    GENERAL_NAME* name = GENERAL_NAME_new();
    ASN1_IA5STRING* text = ASN1_IA5STRING_new();
    ASN1_STRING_set(text, dns.data(), static_cast<int>(dns.size()));
    GENERAL_NAME_set0_value(name, GEN_DNS, text);
    sk_GENERAL_NAME_push(names.get(), name);
  }
  GENERAL_NAME* ip = GENERAL_NAME_new();
  ASN1_OCTET_STRING* address = ASN1_OCTET_STRING_new();
  const unsigned char loopback[4] = {127, 0, 0, 1};
  ASN1_OCTET_STRING_set(address, loopback, sizeof(loopback));
  GENERAL_NAME_set0_value(ip, GEN_IPADD, address);
  sk_GENERAL_NAME_push(names.get(), ip);
  return X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, 0) == 1;
}

}  // namespace

common::Result<PemPair> SelfSignedCertificate(const std::vector<std::string>& dns_names, int days) {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("key");
  Cert cert(X509_new());
  if (!cert) return OpenSslError("certificate");
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return OpenSslError("serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  const bool serial_ok = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  const std::string cn = dns_names.empty() ? "taskgov" : dns_names.front();
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (!serial_ok || X509_set_version(cert.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), int64_t{days} * 86400) == nullptr ||
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), subject) != 1 ||
      X509_set_pubkey(cert.get(), key.get()) != 1 || !AddAltNames(cert.get(), dns_names) ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return OpenSslError("signing");
  }
  PemPair out;
  out.certificate = Pem([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
  out.key = Pem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  if (out.certificate.empty() || out.key.empty()) return OpenSslError("PEM");
  return out;
}

}  // namespace taskgov::extender
