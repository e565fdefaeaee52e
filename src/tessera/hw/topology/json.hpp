#pragma once
// tessera's JSON form of a HostTopology: what `tessera agent` serves, what the extender and the
// cluster simulator read back. Round-trips exactly (to_json then from_json gives an equal
// topology). Allocation status is the cluster level's and is written beside it by
// cluster::node_json, not here.
//
// {"hostname": "...", "source": "...",
//  "nodes": [{"id": 0, "kind": "machine", "name": "machine"}, {"id": 1, "kind": "socket", ...},
//            {"kind": "gpu", "name": "gpu0", "socket": 0, "numa": 0, "memory_bytes": ...,
//             "model": "...", "pci_bus_id": "...", "uuid": "..."}, ...],
//  "edges": [{"kind": "host", "from": 0, "to": 1}, {"kind": "nearby", "from": 7, "to": 8,
//             "via": "nvlink"}, ...],
//  "numa_distances": [[10, 21], [21, 10]]}
// A NUMA vertex's "memory_bytes" is absent (or null) when its memory is unknown; it carries
// "reserved_cpus" and "reserved_memory_bytes" when the kubelet reserves some; "numa_distances"
// (one row per NUMA node, in their order) is there when the source gave them.

#include <nlohmann/json.hpp>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::hw {

nlohmann::json to_json(const HostTopology& t);
// Rebuilt through HostTopologyBuilder, so a hand-edited file is checked like any other source;
// errors name the JSON path ("nodes[4].numa: ...") and `origin`.
core::Result<HostTopology> topology_from_json(const nlohmann::json& j, const std::string& origin);
core::Result<HostTopology> load_topology_json(const std::string& path);

}  // namespace tessera::hw
