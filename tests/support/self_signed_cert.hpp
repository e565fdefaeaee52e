#pragma once
// A throwaway self-signed certificate for 127.0.0.1, made by the openssl command line (which
// scripts/install-deps.sh installs), for the TLS tests of the extender and the agent.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace tessera::test {

struct TlsFiles {
  std::filesystem::path dir;  // holds both; the caller removes it
  std::string cert;
  std::string key;
};

// nullopt when the openssl command is missing or fails; the caller skips, saying so.
inline std::optional<TlsFiles> make_self_signed_cert(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_" + tag + "_tls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  TlsFiles f{dir, (dir / "cert.pem").string(), (dir / "key.pem").string()};
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      f.key + " -out " + f.cert + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return std::nullopt;
  return f;
}

inline constexpr const char* kNoOpenssl =
    "the openssl command is not available (scripts/install-deps.sh installs it)";

}  // namespace tessera::test
