// Running a graph: partition into compiled clusters and host ops (auto-jit) or compile the
// whole graph (must-compile), pick plugins through the registry, pass values between
// clusters, and cache compiled clusters by fingerprint + input shapes.
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/placer.h"
#include "core/graph/variable_store.h"
#include "core/module_executable.h"
#include "core/plugin_registry.h"

namespace kiln::graph {

// A maximal connected set of compilable nodes (or one host-only node) run as a unit.
struct Cluster {
  int id = 0;
  bool compiled = true;            // false: a single host-kernel node
  std::vector<const Node*> nodes;  // topological order
  std::vector<Edge> inputs;        // values produced outside, in first-use order
  std::vector<Edge> outputs;       // values used outside or as graph outputs
  std::string requested_device;    // from the nodes' `device` attributes, if any
  std::string device;              // assigned by the placer ("host" for host ops); empty:
                                   // chosen when compiling (must-compile)
  std::string fingerprint;         // the cluster's nodes and boundary, as text
};

// Auto-jit partition: contracts compilable neighbours into one cluster only when no path
// leaves the pair and re-enters (so the cluster graph stays acyclic) and their devices agree:
// the assigned ones in `placement` (core/graph/placer.h) when given, else the requested ones.
// Placeholders belong to no cluster. Clusters come in an executable order.
absl::StatusOr<std::vector<Cluster>> PartitionGraph(const Graph& g,
                                                    const Placement& placement = {});

// Graphviz DOT of the partition: one box per cluster (host ops in their own), data edges
// solid, control edges dashed, Placeholders outside every cluster.
std::string ClustersToDot(const Graph& g, const std::vector<Cluster>& clusters);

struct ExecutorOptions {
  std::string device = "auto";
  bool must_compile = false;
  bool log_compiles = false;
  bool log_placement = false;
  // A node's requested device that is not usable falls back to `device` (with a log line)
  // instead of failing.
  bool soft_placement = false;
  // Each cluster's module goes through the core pipeline (core/core_passes.h) before its
  // plugin compiles it, unless false or the plugin asks for modules as written.
  bool core_passes = true;
  std::ostream* log = nullptr;  // where the logs go (stderr when null)
};

class GraphExecutor {
 public:
  // `graph` and `registry` must outlive the executor; runs record each node's
  // assigned_device ("host" or the plugin name) in `graph`.
  static absl::StatusOr<std::unique_ptr<GraphExecutor>> Create(Graph& graph,
                                                               const PluginRegistry& registry,
                                                               ExecutorOptions options);
  // Feeds the Placeholders in text order; returns the graph outputs.
  absl::StatusOr<std::vector<Literal>> Run(const std::vector<Literal>& inputs);

  int compile_count() const { return compile_count_; }
  // Variable values, kept across runs; a run's updates are committed when it succeeds.
  VariableStore& variables() { return variables_; }
  const std::vector<Cluster>& clusters() const { return clusters_; }

 private:
  GraphExecutor(Graph& g, const PluginRegistry& r, ExecutorOptions o)
      : graph_(g), registry_(r), options_(std::move(o)) {}
  struct Compiled {
    std::unique_ptr<ModuleExecutable> exe;
  };
  absl::StatusOr<const Compiled*> GetOrCompile(const Cluster& c, const std::vector<ValueInfo>& in);
  std::ostream& log() const;

  Graph& graph_;
  const PluginRegistry& registry_;
  ExecutorOptions options_;
  std::vector<Cluster> clusters_;
  std::map<std::string, Compiled> cache_;
  int compile_count_ = 0;
  VariableStore variables_;
  bool placement_logged_ = false;
};

}  // namespace kiln::graph
