#pragma once
// A Kubernetes API server for tests (cpp-httplib on a free loopback port): it records every GET,
// POST, PUT and PATCH it gets and answers each with what the test's `answer` says (by default 201
// with an empty v1.Status). An answer may stream (Response::set_chunked_content_provider), as a
// watch does.

#include <httplib.h>

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tessera::test {

struct ApiRequest {
  std::string method;
  std::string path;
  std::string field_manager;  // ?fieldManager=
  std::string force;          // ?force=
  std::string content_type;
  std::string auth;  // the Authorization header
  nlohmann::json body;
};

// A v1.Status answer with `code` and `message`, as the API server refuses.
inline void status_answer(httplib::Response& res, int code, const std::string& message) {
  res.status = code;
  res.set_content(nlohmann::json{{"kind", "Status"},
                                 {"apiVersion", "v1"},
                                 {"status", "Failure"},
                                 {"message", message},
                                 {"code", code}}
                      .dump(),
                  "application/json");
}

class FakeApiServer {
 public:
  using Answer = std::function<void(const httplib::Request&, httplib::Response&)>;

  explicit FakeApiServer(Answer answer = {}) : answer_(std::move(answer)) {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      requests_.push_back({req.method, req.path, req.get_param_value("fieldManager"),
                           req.get_param_value("force"), req.get_header_value("Content-Type"),
                           req.get_header_value("Authorization"),
                           nlohmann::json::parse(req.body, nullptr, false)});
      res.status = 201;
      res.set_content(R"({"kind":"Status","status":"Success","code":201})", "application/json");
      if (answer_) answer_(req, res);
    };
    server_.Get(".*", handle);
    server_.Post(".*", handle);
    server_.Put(".*", handle);
    server_.Patch(".*", handle);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<ApiRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  ApiRequest last() {
    std::lock_guard lock(mu_);
    return requests_.empty() ? ApiRequest{} : requests_.back();
  }

 private:
  Answer answer_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<ApiRequest> requests_;
};

}  // namespace tessera::test
