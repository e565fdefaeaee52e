// v1.Pod -> cluster::Pod: Kubernetes quantities, summed requests, QoS and topology annotations,
// and errors that name the field.

#include "tessera/k8s/pod_translation.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "support/golden/golden.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// A pod as kube-scheduler sends it, from tests/k8s/golden/.
json golden(const std::string& name) {
  const auto file = test::golden_file("k8s", name);
  const auto text = test::read_text_file(file);
  if (!text) throw std::runtime_error("cannot read " + file.string());
  return json::parse(*text);
}

std::int64_t ceil_of(std::string_view text) {
  auto q = parse_quantity(text);
  EXPECT_TRUE(q) << text << ": " << (q ? "" : q.error().message());
  if (!q) return -1;
  auto v = quantity_ceil(*q);
  EXPECT_TRUE(v) << text;
  return v ? *v : -1;
}

TEST(Quantity, ParsesKubernetesForms) {
  constexpr std::int64_t Ki = 1024, Mi = Ki * 1024, Gi = Mi * 1024;
  EXPECT_EQ(ceil_of("0"), 0);
  EXPECT_EQ(ceil_of("123456"), 123456);
  EXPECT_EQ(ceil_of("64Gi"), 64 * Gi);
  EXPECT_EQ(ceil_of("512Mi"), 512 * Mi);
  EXPECT_EQ(ceil_of("1Ki"), Ki);
  EXPECT_EQ(ceil_of("1Ei"), std::int64_t{1} << 60);
  EXPECT_EQ(ceil_of("1G"), 1'000'000'000);
  EXPECT_EQ(ceil_of("1k"), 1000);
  EXPECT_EQ(ceil_of("2T"), 2'000'000'000'000);
  EXPECT_EQ(ceil_of("1.5"), 2);  // Value() rounds up
  EXPECT_EQ(ceil_of("1.5Gi"), 3 * Gi / 2);
  EXPECT_EQ(ceil_of("500m"), 1);
  EXPECT_EQ(ceil_of("1000m"), 1);
  EXPECT_EQ(ceil_of("1001m"), 2);
  EXPECT_EQ(ceil_of("1e3"), 1000);
  EXPECT_EQ(ceil_of("1E3"), 1000);  // an exponent, not exa
  EXPECT_EQ(ceil_of("1E"), 1'000'000'000'000'000'000);
  EXPECT_EQ(ceil_of("12e-1"), 2);
  EXPECT_EQ(ceil_of(".5"), 1);
  EXPECT_EQ(ceil_of("5."), 5);
  EXPECT_EQ(ceil_of("+7"), 7);
  EXPECT_EQ(ceil_of("100n"), 1);
  EXPECT_EQ(ceil_of("0.000001u"), 1);
  EXPECT_EQ(ceil_of("0000000000000000000000000000000000000000001"), 1);
}

TEST(Quantity, WholeNumbers) {
  EXPECT_TRUE(quantity_is_integer(*parse_quantity("2")));
  EXPECT_TRUE(quantity_is_integer(*parse_quantity("2000m")));
  EXPECT_TRUE(quantity_is_integer(*parse_quantity("0.5Ki")));
  EXPECT_FALSE(quantity_is_integer(*parse_quantity("1.5")));
  EXPECT_FALSE(quantity_is_integer(*parse_quantity("1500m")));
}

TEST(Quantity, ErrorsSayWhatIsWrong) {
  auto error = [](std::string_view text) {
    auto q = parse_quantity(text);
    EXPECT_FALSE(q) << text;
    return q ? std::string{} : q.error().message();
  };
  EXPECT_NE(error("").find("empty"), std::string::npos);
  EXPECT_NE(error("1.5Gb").find("unknown suffix 'Gb'"), std::string::npos);
  EXPECT_NE(error("Gi").find("no digits"), std::string::npos);
  EXPECT_NE(error("1..5").find("decimal point"), std::string::npos);
  EXPECT_NE(error("1e").find("unknown suffix"), std::string::npos);  // "e" alone is no suffix
  EXPECT_NE(error("1e+").find("exponent"), std::string::npos);
  EXPECT_NE(error("1 Gi").find("unknown suffix ' Gi'"), std::string::npos);
  EXPECT_NE(error(std::string(60, '9')).find("significant digits"), std::string::npos);
  EXPECT_FALSE(quantity_ceil(*parse_quantity("9Ei")));  // past int64
  EXPECT_FALSE(quantity_ceil(*parse_quantity("1e30")));
}

TEST(PodTranslation, ServingPodAsKubeSchedulerSendsIt) {
  auto p = translate_pod(golden("llm_pod.json"));
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->name, "inference/llm-serving-7d9f8b6c4-x2kqz");
  EXPECT_EQ(p->uid, "6f1c2d3e-4b5a-4c7d-9e8f-0a1b2c3d4e5f");
  EXPECT_EQ(p->priority, 1000000);
  EXPECT_EQ(p->request.gpus, 2);
  EXPECT_EQ(p->request.cpus, 9);  // 8 + 500m, summed exactly, then rounded up
  EXPECT_EQ(p->request.memory_bytes, (std::int64_t{64} << 30) + (std::int64_t{128} << 20));
  EXPECT_EQ(p->qos, cluster::Qos::kGuaranteed);
  EXPECT_EQ(p->topology, cluster::TopologyRequirement::kNuma);
}

TEST(PodTranslation, BatchPodWithInitContainerAndLimitsOnly) {
  auto p = translate_pod(golden("batch_pod.json"));
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->name, "batch/finetune-job-0-abcde");
  EXPECT_EQ(p->priority, 100);
  EXPECT_EQ(p->request.gpus, 1);                               // from limits
  EXPECT_EQ(p->request.cpus, 2);                               // max(1500m, init 2)
  EXPECT_EQ(p->request.memory_bytes, std::int64_t{16} << 30);  // max(16Gi, init 4G)
  EXPECT_EQ(p->qos, cluster::Qos::kBestEffort);                // Burstable
  EXPECT_EQ(p->topology, cluster::TopologyRequirement::kNone);
}

json minimal(json resources) {
  return json{{"metadata", {{"name", "p"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"resources", resources}}}}}}};
}

TEST(PodTranslation, Defaults) {
  auto p = translate_pod(minimal(json::object()));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "default/p");
  EXPECT_EQ(p->priority, 0);
  EXPECT_EQ(p->request.gpus, 0);
  EXPECT_EQ(p->qos, cluster::Qos::kBestEffort);
  // "containers": null, as kube-scheduler's own example sends it.
  auto q =
      translate_pod(json{{"metadata", {{"name", "podname"}}}, {"spec", {{"containers", nullptr}}}});
  ASSERT_TRUE(q);
}

TEST(PodTranslation, QosFromKubernetesWhenNoAnnotation) {
  // No status.qosClass: computed. Limits only -> requests default to them -> Guaranteed.
  auto g = translate_pod(minimal({{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}}}));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->qos, cluster::Qos::kGuaranteed);
  // 2000m equals 2: still Guaranteed.
  auto g2 = translate_pod(minimal({{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}},
                                   {"requests", {{"cpu", "2000m"}, {"memory", "1024Mi"}}}}));
  ASSERT_TRUE(g2);
  EXPECT_EQ(g2->qos, cluster::Qos::kGuaranteed);
  auto b = translate_pod(minimal({{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}},
                                  {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->qos, cluster::Qos::kBestEffort);
  // The annotation overrides the class.
  json pod = minimal({{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}}});
  pod["metadata"]["annotations"] = {{"tessera.io/qos", "best-effort"}};
  EXPECT_EQ(translate_pod(pod)->qos, cluster::Qos::kBestEffort);
  pod["status"] = {{"qosClass", "BestEffort"}};
  pod["metadata"]["annotations"] = json::object();
  EXPECT_EQ(translate_pod(pod)->qos, cluster::Qos::kBestEffort);
}

TEST(PodTranslation, ErrorsNameTheField) {
  auto error = [](const json& pod) {
    auto p = translate_pod(pod);
    EXPECT_FALSE(p) << pod.dump();
    return p ? std::string{} : p.error().message();
  };
  EXPECT_NE(error(minimal({{"requests", {{"memory", "64GB"}}}}))
                .find("spec.containers[0].resources.requests.memory"),
            std::string::npos);
  EXPECT_NE(error(minimal({{"requests", {{"nvidia.com/gpu", "1.5"}}}})).find("whole number"),
            std::string::npos);
  EXPECT_NE(error(minimal({{"requests", {{"cpu", "-1"}}}})).find("negative"), std::string::npos);
  EXPECT_NE(error(minimal({{"requests", {{"cpu", true}}}})).find("quantity"), std::string::npos);
  EXPECT_NE(error(minimal({{"requests", "lots"}})).find("resources.requests"), std::string::npos);
  EXPECT_NE(error(json{{"metadata", {{"name", "p"}}}, {"spec", {{"containers", {1}}}}})
                .find("spec.containers[0]"),
            std::string::npos);
  EXPECT_NE(error(json{{"spec", json::object()}}).find("metadata"), std::string::npos);
  EXPECT_NE(error(json{{"metadata", {{"name", 7}}}}).find("metadata.name"), std::string::npos);
  json bad_prio = minimal(json::object());
  bad_prio["spec"]["priority"] = 5'000'000'000LL;
  EXPECT_NE(error(bad_prio).find("spec.priority"), std::string::npos);
  json bad_topo = minimal(json::object());
  bad_topo["metadata"]["annotations"] = {{"tessera.io/topology", "rack"}};
  EXPECT_NE(error(bad_topo).find("tessera.io/topology"), std::string::npos);
  json bad_qos = minimal(json::object());
  bad_qos["metadata"]["annotations"] = {{"tessera.io/qos", "Guaranteed"}};
  EXPECT_NE(error(bad_qos).find("tessera.io/qos"), std::string::npos);
  EXPECT_FALSE(translate_pod(json::array()));
  EXPECT_FALSE(translate_pod(minimal({{"requests", {{"cpu", "9Ei"}}}})));
}

}  // namespace
}  // namespace tessera::k8s
