// A module partitioned across plugins (core/hlo_partitioner.h), compiled one executable per
// cluster and run cluster by cluster; values cross between clusters as host literals.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/hlo_partitioner.h"

namespace kiln {

class PartitionedExecutable {
 public:
  // Compiles every cluster on its plugin. `module` must outlive the executable.
  static absl::StatusOr<std::unique_ptr<PartitionedExecutable>> Compile(
      const HloModule& module, std::vector<HloCluster> clusters,
      const CompileOptions& options = {});

  // One literal per entry parameter; returns the array leaves of the entry root (tuples
  // flattened depth-first), like Executable::Execute on the whole module.
  absl::StatusOr<std::vector<Literal>> Execute(std::span<const Literal> args) const;

  const std::vector<HloCluster>& clusters() const { return clusters_; }

 private:
  PartitionedExecutable(const HloModule& m, std::vector<HloCluster> c)
      : module_(m), clusters_(std::move(c)) {}
  const HloModule& module_;
  std::vector<HloCluster> clusters_;
  std::vector<std::unique_ptr<Executable>> executables_;  // one per cluster
};

// The plugins used, in order of first use, joined with '+' ("test-elementwise+cpu-llvm").
std::string PartitionDeviceNames(const std::vector<HloCluster>& clusters);

// `--log-partition` lines, one per cluster, each after `prefix`:
// `cluster 0: test-elementwise (4 instructions, 1 input, 1 output)`.
std::string DescribePartition(const std::vector<HloCluster>& clusters,
                              std::string_view prefix = "");

}  // namespace kiln
