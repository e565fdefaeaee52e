#pragma once
// Throwaway certificates, made by the openssl command line (which scripts/install-deps.sh
// installs), for the TLS tests of the extender and the agent: a self-signed server certificate
// for 127.0.0.1, and client certificates for mutual TLS.

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

// Mutual TLS: a CA, a client certificate it signs, and a self-signed client certificate it does
// not, each with its key, in one folder.
struct ClientCerts {
  std::filesystem::path dir;  // the caller removes it
  std::string ca;
  std::string cert, key;                    // signed by `ca`
  std::string stranger_cert, stranger_key;  // not
};

inline std::optional<ClientCerts> make_client_certs(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_" + tag + "_mtls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto at = [&](const char* name) { return (dir / name).string(); };
  ClientCerts c{dir,
                at("ca.pem"),
                at("client.pem"),
                at("client.key"),
                at("stranger.pem"),
                at("stranger.key")};
  const std::string quiet = " >/dev/null 2>&1";
  const std::string cmds[] = {
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tessera-test-ca -keyout " +
          at("ca.key") + " -out " + c.ca + quiet,
      "openssl req -newkey rsa:2048 -nodes -subj /CN=tessera-agent -keyout " + c.key + " -out " +
          at("client.csr") + quiet,
      "openssl x509 -req -days 1 -in " + at("client.csr") + " -CA " + c.ca + " -CAkey " +
          at("ca.key") + " -CAcreateserial -out " + c.cert + quiet,
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=stranger -keyout " +
          c.stranger_key + " -out " + c.stranger_cert + quiet,
  };
  for (const std::string& cmd : cmds) {
    if (std::system(cmd.c_str()) != 0) return std::nullopt;
  }
  return c;
}

inline constexpr const char* kNoOpenssl =
    "the openssl command is not available (scripts/install-deps.sh installs it)";

}  // namespace tessera::test
