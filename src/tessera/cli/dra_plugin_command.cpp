#include "tessera/cli/dra_plugin_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/cli/node_name.hpp"
#include "tessera/cli/stop_signals.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/dra/api_claim_source.hpp"
#include "tessera/dra/daemon_grants.hpp"
#include "tessera/dra/dra_driver.hpp"
#include "tessera/dra/dra_grpc.hpp"
#include "tessera/dra/mig_partitions.hpp"
#include "tessera/dra/slice_publisher.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::cli {

void add_dra_plugin_options(CLI::App& command, DraPluginFlags& f) {
  CLI::App* c = &command;
  c->add_option("--node", f.node,
                "Kubernetes node name, the pool its GPUs are in (default: $NODE_NAME, else the "
                "hostname in lowercase)");
  c->add_option("--driver-name", f.driver_name,
                "The DRA driver name DeviceClasses and ResourceSlices name")
      ->capture_default_str();
  c->add_option("--registration-socket", f.registration_socket,
                "Where the kubelet's plugin watcher finds the plugin")
      ->capture_default_str();
  c->add_option("--plugin-socket", f.plugin_socket,
                "The DRA node service's socket, announced at registration")
      ->capture_default_str();
  c->add_option("--checkpoint", f.checkpoint,
                "The claims prepared on this node, kept across restarts")
      ->capture_default_str();
  c->add_option("--cdi-dir", f.cdi_dir, "The container runtime's CDI spec folder")
      ->capture_default_str();
  c->add_option("--daemon-socket", f.daemon_socket,
                "tesserad's control socket on the host (its folder is mounted into each "
                "container of a prepared claim)")
      ->capture_default_str();
  c->add_option("--interposer", f.interposer, "libtessera_interpose.so on the host")
      ->capture_default_str();
  c->add_option("--interposer-in-container", f.interposer_in_container,
                "Where the interposer appears in the container (LD_PRELOAD names it)")
      ->capture_default_str();
  c->add_option("--mps-pipe-dir", f.mps_pipe_dir,
                "The MPS pipe folder of tesserad's MPS control daemon (tesserad --mps), mounted "
                "into containers and named in CUDA_MPS_PIPE_DIRECTORY; empty: no MPS");
  c->add_option("--nvidia-cdi-kind", f.nvidia_cdi_kind,
                "CDI kind of NVIDIA's spec (nvidia-ctk cdi generate), whose device <index> "
                "brings the driver's libraries; empty: inject the GPU's device nodes only")
      ->capture_default_str();
  c->add_option("--topology", f.topology_file,
                "Publish the GPUs of this topology file (hwloc XML, NCCL XML or tessera JSON) "
                "instead of discovering the host's through hwloc");
  c->add_option("--sysfs", f.sysfs, "Where sysfs is mounted (each GPU's PCIe root is read there)")
      ->capture_default_str();
  c->add_flag("--once", f.once,
              "Print the ResourceSlice this node would publish (JSON) and exit: no API server, "
              "no kubelet");
  c->add_option("--refresh", f.refresh,
                "Check the node's ResourceSlice against its GPUs every this long, e.g. 60s")
      ->capture_default_str();
  add_api_server_options(*c, f.api,
                         "to read ResourceClaims from and publish the node's ResourceSlice to");
}

namespace {

// The node's GPUs as the slice lists them; an error when there are none to publish.
// NVML's MIG partitions, when NVML can be loaded (none on a node without NVIDIA's driver, or in
// a test without the fake).
std::unique_ptr<dra::MigPartitions> mig_partitions() {
  auto library = cuda::NvmlLibrary::open();
  if (!library) {
    core::logger().info(
        "dra-plugin: no NVML ({}): GPUs are published whole, none as MIG "
        "partitions",
        library.error().message());
    return nullptr;
  }
  return std::make_unique<dra::NvmlMigPartitions>(std::move(*library));
}

core::Result<std::vector<dra::SliceGpu>> node_gpus(const DraPluginFlags& f,
                                                   dra::MigPartitions* mig) {
  TESSERA_ASSIGN_OR_RETURN(
      const hw::HostTopology topology,
      f.topology_file.empty() ? hw::discover_host() : hw::load_topology_file(f.topology_file));
  auto gpus = dra::slice_gpus(topology, f.sysfs);
  if (mig != nullptr) {
    for (auto& g : gpus) g.mig_profiles = mig->profiles(g.index);
  }
  if (gpus.empty()) {
    return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                       "no GPU in the node's topology ({}): nothing to publish",
                       f.topology_file.empty() ? "hwloc" : f.topology_file);
  }
  return gpus;
}

// Publishes the slice when the node's GPUs differ from it; a failure is logged and retried at
// the next period, since claims already prepared do not need it.
void refresh_slice(dra::SlicePublisher& publisher, const DraPluginFlags& f,
                   dra::MigPartitions* mig) {
  auto gpus = node_gpus(f, mig);
  auto written =
      gpus ? publisher.publish(*gpus) : core::Result<bool>(std::unexpected(gpus.error()));
  if (!written) {
    core::logger().warn("dra-plugin: ResourceSlice not published: {}", written.error().message());
  } else if (*written) {
    core::logger().info("dra-plugin: ResourceSlice published ({} GPUs)", gpus->size());
  }
}

}  // namespace

Outcome run_dra_plugin_command(const DraPluginFlags& f) {
  TESSERA_ASSIGN_OR_RETURN(const core::Nanos refresh,
                           core::with_context(core::parse_duration(f.refresh), "--refresh"));
  if (refresh <= 0) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "--refresh {}: must be longer than 0", f.refresh);
  }
  if (f.once) {
    const auto mig = mig_partitions();
    TESSERA_ASSIGN_OR_RETURN(const auto gpus, node_gpus(f, mig.get()));
    const auto slices = dra::resource_slices(f.driver_name, node_name_or_default(f.node), 1, gpus);
    for (std::size_t i = 0; i < slices.size(); ++i) {
      fmt::print("{}{}\n", i == 0 ? "" : "---\n", slices[i].dump(2));
    }
    return {};
  }
  TESSERA_ASSIGN_OR_RETURN(auto api_server, api_server_config(f.api));
  if (!api_server) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "dra-plugin reads claims from the API server: give --in-cluster (in a pod) "
                      "or --apiserver with --token-file");
  }
  TESSERA_ASSIGN_OR_RETURN(auto client, k8s::ApiServerClient::create(std::move(*api_server)));
  dra::SlicePublisher publisher(client, f.driver_name, node_name_or_default(f.node));
  dra::ApiClaimSource claims(std::move(client));
  dra::DaemonGrants grants(f.daemon_socket);

  dra::DriverOptions options;
  options.driver_name = f.driver_name;
  options.node_name = node_name_or_default(f.node);
  options.cdi_dir = f.cdi_dir;
  options.checkpoint_path = f.checkpoint;
  options.interposer_host_path = f.interposer;
  options.interposer_container_path = f.interposer_in_container;
  options.daemon_socket = f.daemon_socket;
  options.mps_pipe_dir = f.mps_pipe_dir;
  options.nvidia_cdi_kind = f.nvidia_cdi_kind;
  const auto mig = mig_partitions();
  TESSERA_ASSIGN_OR_RETURN(auto driver, dra::DraDriver::open(options, claims, grants, mig.get()));

  StopSignals stop;  // before gRPC starts its threads
  TESSERA_ASSIGN_OR_RETURN(
      auto server, dra::DraPluginServer::start(
                       *driver, {.registration = f.registration_socket, .dra = f.plugin_socket}));
  fmt::print(stderr,
             "tessera dra-plugin: driver {} on node {}, {} claims prepared; registration on {}, "
             "DRA service on {}\n",
             options.driver_name, options.node_name, driver->prepared(), f.registration_socket,
             f.plugin_socket);
  refresh_slice(publisher, f, mig.get());
  core::SystemClock clock;
  core::Nanos next = clock.now() + refresh;
  int signal = 0;
  while ((signal = stop.take_pending()) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (clock.now() >= next) {
      refresh_slice(publisher, f, mig.get());
      next = clock.now() + refresh;
    }
  }
  core::logger().info("dra-plugin: {}: stopping", StopSignals::name(signal));
  server->shutdown();
  return {};
}

}  // namespace tessera::cli
