#include "tessera/k8s/tls_certificate.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "tessera/core/log.hpp"

namespace tessera::k8s {
namespace {

// ASSUMPTION: no served chain is longer than 16 certificates (a leaf and a few intermediates).
constexpr unsigned kMaxChain = 16;

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

gnutls_datum_t datum(const std::string& s) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
          static_cast<unsigned>(s.size())};
}

}  // namespace

struct ReloadingCertificate::Pair {
  gnutls_pcert_st chain[kMaxChain];
  unsigned length = 0;
  gnutls_privkey_t key = nullptr;
  ~Pair() {
    for (unsigned i = 0; i < length; ++i) gnutls_pcert_deinit(&chain[i]);
    if (key != nullptr) gnutls_privkey_deinit(key);
  }
};

ReloadingCertificate::ReloadingCertificate(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

ReloadingCertificate::~ReloadingCertificate() = default;

core::Result<std::unique_ptr<ReloadingCertificate::Pair>> ReloadingCertificate::read(
    const std::string& cert_file, const std::string& key_file) {
  const auto bad = [&](std::string_view why) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "cannot load the TLS certificate '{}' and key '{}': {}", cert_file, key_file,
                       why);
  };
  std::string cert;
  std::string key;
  if (!read_file(cert_file, cert) || !read_file(key_file, key)) return bad("missing or unreadable");
  if (cert.empty() || key.empty()) return bad("empty");
  // GnuTLS's own check that the key is the certificate's.
  gnutls_certificate_credentials_t check = nullptr;
  if (gnutls_certificate_allocate_credentials(&check) < 0) return bad("no memory");
  const gnutls_datum_t cert_data = datum(cert);
  const gnutls_datum_t key_data = datum(key);
  const int matched =
      gnutls_certificate_set_x509_key_mem(check, &cert_data, &key_data, GNUTLS_X509_FMT_PEM);
  gnutls_certificate_free_credentials(check);
  if (matched < 0) {
    return bad(fmt::format("not PEM, or the key does not match the certificate ({})",
                           gnutls_strerror(matched)));
  }
  auto pair = std::make_unique<Pair>();
  unsigned length = kMaxChain;
  if (gnutls_pcert_list_import_x509_raw(pair->chain, &length, &cert_data, GNUTLS_X509_FMT_PEM, 0) <
      0) {
    return bad("more than 16 certificates in the chain, or not PEM");
  }
  pair->length = length;
  if (gnutls_privkey_init(&pair->key) < 0 ||
      gnutls_privkey_import_x509_raw(pair->key, &key_data, GNUTLS_X509_FMT_PEM, nullptr, 0) < 0) {
    return bad("the key is not PEM");
  }
  return pair;
}

ReloadingCertificate::Stamp ReloadingCertificate::stamp() const {
  Stamp s;
  struct stat st {};
  if (::stat(cert_file_.c_str(), &st) == 0) {
    s.cert_mtime_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
    s.cert_size = static_cast<std::uintmax_t>(st.st_size);
  }
  if (::stat(key_file_.c_str(), &st) == 0) {
    s.key_mtime_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
    s.key_size = static_cast<std::uintmax_t>(st.st_size);
  }
  return s;
}

core::Result<std::unique_ptr<ReloadingCertificate>> ReloadingCertificate::load(
    std::string cert_file, std::string key_file) {
  std::unique_ptr<ReloadingCertificate> r(
      new ReloadingCertificate(std::move(cert_file), std::move(key_file)));
  r->stamp_ = r->stamp();
  auto pair = read(r->cert_file_, r->key_file_);
  if (!pair) return std::unexpected(pair.error());
  r->pairs_.push_back(std::move(*pair));
  r->checked_ = std::chrono::steady_clock::now();
  return r;
}

int ReloadingCertificate::retrieve(gnutls_pcert_st** chain, unsigned* length,
                                   gnutls_privkey_t* key) {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - checked_ >= std::chrono::seconds(1)) {
    checked_ = now;
    if (const Stamp s = stamp(); !(s == stamp_)) {
      stamp_ = s;
      if (auto pair = read(cert_file_, key_file_)) {
        pairs_.push_back(std::move(*pair));
        ++reloads_;
        core::logger().info("TLS certificate '{}' changed: serving the new one", cert_file_);
      } else {
        core::logger().error("{}; still serving the previous certificate", pair.error().message());
      }
    }
  }
  Pair& current = *pairs_.back();
  *chain = current.chain;
  *length = current.length;
  *key = current.key;
  return 0;
}

unsigned ReloadingCertificate::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

}  // namespace tessera::k8s
