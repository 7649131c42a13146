// Contracting a DAG into clusters of equal label without creating cycles: the shared core of
// HLO-level partitioning (core/hlo_partitioner) and usable by any node-graph partitioner.
#pragma once

#include <vector>

namespace kiln {

struct Contraction {
  std::vector<int> cluster_of;  // node -> cluster; clusters are numbered in an executable order
  int num_clusters = 0;
};

// `preds[v]` lists the nodes v depends on (data or control); every pred index is below v
// (the nodes come in a topological order). Neighbours with the same `label[v]` (>= 0) are
// merged unless a path leaves the pair and re-enters, so the cluster graph stays acyclic;
// nodes with a negative label stay alone. Clusters are numbered by a topological order of
// the cluster graph, ties broken by their first node.
Contraction ContractByLabel(const std::vector<std::vector<int>>& preds,
                            const std::vector<int>& label);

}  // namespace kiln
