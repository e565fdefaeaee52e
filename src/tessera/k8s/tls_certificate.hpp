#pragma once
// A server's TLS certificate chain and key, read from their files and read again when either
// file changes: cert-manager and the kubelet rotate certificates in place, and a server should
// take the new one without a restart. libmicrohttpd asks for it at every handshake (its GnuTLS
// certificate callback); the files are looked at no more than once a second. A new pair that does
// not load, or whose key does not match its certificate, is logged and the pair in use kept.

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::k8s {

class ReloadingCertificate {
 public:
  // Fails naming the files when they cannot be read, are not PEM, or do not match.
  static core::Result<std::unique_ptr<ReloadingCertificate>> load(std::string cert_file,
                                                                  std::string key_file);
  ~ReloadingCertificate();
  ReloadingCertificate(const ReloadingCertificate&) = delete;
  ReloadingCertificate& operator=(const ReloadingCertificate&) = delete;

  // The chain and key to present now (GnuTLS's certificate retrieve function); 0 on success.
  int retrieve(gnutls_pcert_st** chain, unsigned* length, gnutls_privkey_t* key);
  // How many times a changed pair was taken.
  unsigned reloads() const;

 private:
  struct Pair;
  struct Stamp {
    std::int64_t cert_mtime_ns = 0, key_mtime_ns = 0;
    std::uintmax_t cert_size = 0, key_size = 0;
    bool operator==(const Stamp&) const = default;
  };
  ReloadingCertificate(std::string cert_file, std::string key_file);
  static core::Result<std::unique_ptr<Pair>> read(const std::string& cert_file,
                                                  const std::string& key_file);
  Stamp stamp() const;

  std::string cert_file_, key_file_;
  mutable std::mutex mu_;
  // Every pair loaded stays alive with the server: a handshake may still use an older one.
  std::vector<std::unique_ptr<Pair>> pairs_;
  Stamp stamp_;
  std::chrono::steady_clock::time_point checked_;
  unsigned reloads_ = 0;
};

}  // namespace tessera::k8s
