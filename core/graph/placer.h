// Node placement by plugin capability: every compilable node gets the highest-priority plugin
// whose capability query accepts the node's lowering, unless a device is requested (the
// node's `device` attribute, else the executor's --device). Host-only nodes go to "host".
#pragma once

#include <map>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/plugin_registry.h"

namespace kiln::graph {

struct PlacerOptions {
  std::string device = "auto";  // for nodes without a `device` attribute
  // A requested device that is not usable, or declines the node, falls back (with a log
  // line) to `device`, or to capability placement when that is "auto", instead of failing.
  bool soft_placement = false;
  std::ostream* log = nullptr;  // soft placement lines (stderr when null)
};

// node name -> assigned device, for every node but Placeholders.
using Placement = std::map<std::string, std::string>;

class Placer {
 public:
  Placer(const PluginRegistry& registry, PlacerOptions options)
      : registry_(registry), options_(std::move(options)) {}

  absl::StatusOr<Placement> Place(const Graph& g);

  // Capability queries made so far: one per distinct op + attributes + input types.
  int capability_queries() const { return queries_; }

 private:
  // The highest-priority plugin accepting `probe_text` (cached under `key`).
  absl::StatusOr<std::string> BestPlugin(const std::string& key, const std::string& probe_text);
  // Whether `plugin` accepts `probe_text` (cached under `key`); `why` says why not.
  bool Accepts(const std::string& plugin, const std::string& key, const std::string& probe_text,
               std::string* why);
  std::ostream& log() const;

  const PluginRegistry& registry_;
  PlacerOptions options_;
  std::map<std::string, absl::StatusOr<std::string>> best_;  // key -> plugin or why none
  std::map<std::string, std::string> accepts_;               // plugin + key -> "" or why not
  int queries_ = 0;
};

}  // namespace kiln::graph
