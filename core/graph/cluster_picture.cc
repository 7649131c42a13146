// Graph clusters -> hlo/dump's band picture: Placeholders in the first band, then each
// cluster in executable order; one colour per device, listed in the legend.
#include "core/graph/cluster_picture.h"

#include <map>

#include "fmt/format.h"
#include "hlo/dump/band_svg.h"

namespace kiln::graph {
namespace {

std::string DeviceOf(const Cluster& c) {
  if (!c.compiled) return "host";
  if (!c.device.empty()) return c.device;
  return c.requested_device.empty() ? "auto" : c.requested_device;
}

BandGraph ToBands(const Graph& g, const std::vector<Cluster>& clusters) {
  BandGraph b;
  std::map<std::string, std::string> colors;  // device -> fill
  auto color = [&](const std::string& device) {
    auto it = colors.find(device);
    if (it != colors.end()) return it->second;
    std::string c = device == "host" ? "#d9d9d9" : PaletteColor(static_cast<int>(colors.size()));
    colors[device] = c;
    b.legend.push_back({device, c});
    return c;
  };
  std::map<std::string, int> index;  // node name -> BandGraph node
  std::vector<const Node*> placeholders = g.Placeholders();
  if (!placeholders.empty()) {
    b.bands.push_back({"inputs", "#f0f0f0"});
    for (const Node* p : placeholders) {
      index[p->name] = static_cast<int>(b.nodes.size());
      b.nodes.push_back({p->name + "\nPlaceholder", 0});
    }
  }
  for (const Cluster& c : clusters) {
    const std::string device = DeviceOf(c);
    const int band = static_cast<int>(b.bands.size());
    b.bands.push_back({c.compiled ? fmt::format("cluster_{} on {}", c.id, device)
                                  : fmt::format("host kernel ({})", c.nodes[0]->name),
                       color(device)});
    for (const Node* n : c.nodes) {
      index[n->name] = static_cast<int>(b.nodes.size());
      b.nodes.push_back({n->name + "\n" + n->op, band});
    }
  }
  for (const auto& n : g.nodes()) {
    auto to = index.find(n->name);
    if (to == index.end()) continue;
    for (const Edge& e : n->inputs) {
      if (auto from = index.find(e.node); from != index.end()) {
        b.edges.push_back(
            {from->second, to->second, false, e.index ? std::to_string(e.index) : ""});
      }
    }
    for (const std::string& c : n->control_inputs) {
      if (auto from = index.find(c); from != index.end()) {
        b.edges.push_back({from->second, to->second, true, ""});
      }
    }
  }
  return b;
}

}  // namespace

std::string ClustersToSvg(const Graph& g, const std::vector<Cluster>& clusters) {
  return BandGraphToSvg(ToBands(g, clusters));
}

std::string ClustersToHtml(const Graph& g, const std::vector<Cluster>& clusters) {
  return BandGraphToHtml(ToBands(g, clusters), "graph clusters", ClustersToDot(g, clusters));
}

}  // namespace kiln::graph
