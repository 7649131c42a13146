// Greedy label-preserving contraction with a reachability check per merge.
#include "core/cluster_contraction.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

namespace kiln {
namespace {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(int keep, int gone) { parent_[Find(gone)] = Find(keep); }

 private:
  std::vector<int> parent_;
};

}  // namespace

Contraction ContractByLabel(const std::vector<std::vector<int>>& preds,
                            const std::vector<int>& label) {
  const int n = static_cast<int>(preds.size());
  UnionFind uf(n);
  // Cluster-level successor sets, kept for representatives only.
  std::vector<std::set<int>> succ(n);
  for (int v = 0; v < n; ++v) {
    for (int p : preds[v]) {
      if (p != v) succ[p].insert(v);
    }
  }
  // Whether b is reachable from a other than by the direct edge a -> b.
  auto reachable_indirectly = [&](int a, int b) {
    std::vector<char> seen(n, 0);
    std::vector<int> work;
    for (int s : succ[a]) {
      if (s != b) work.push_back(s);
    }
    while (!work.empty()) {
      int c = work.back();
      work.pop_back();
      if (c == b) return true;
      if (seen[c]) continue;
      seen[c] = 1;
      for (int s : succ[c]) work.push_back(s);
    }
    return false;
  };
  auto merge = [&](int a, int b) {  // b joins a
    uf.Join(a, b);
    for (int s : succ[b]) {
      if (s != a) succ[a].insert(s);
    }
    succ[a].erase(b);
    succ[b].clear();
    for (int c = 0; c < n; ++c) {
      if (c != a && uf.Find(c) == c && succ[c].erase(b)) succ[c].insert(a);
    }
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (int v = 0; v < n; ++v) {
      if (label[v] < 0) continue;
      for (int p : preds[v]) {
        if (label[p] != label[v]) continue;
        int a = uf.Find(p), b = uf.Find(v);
        if (a == b) continue;
        // Merge in whichever direction the cluster edge goes (a -> b after earlier merges).
        if (succ[a].count(b)) {
          if (reachable_indirectly(a, b)) continue;
        } else if (succ[b].count(a)) {
          if (reachable_indirectly(b, a)) continue;
        } else {
          continue;
        }
        merge(a, b);
        changed = true;
      }
    }
  }
  // Number clusters by a topological order (Kahn), ties by smallest first node.
  std::vector<int> indeg(n, 0);
  std::vector<int> reps;
  for (int v = 0; v < n; ++v) {
    if (uf.Find(v) == v) reps.push_back(v);
  }
  for (int r : reps) {
    for (int s : succ[r]) ++indeg[s];
  }
  // A cluster's representative is not necessarily its first node: order by first node.
  std::vector<int> first(n, n);
  for (int v = 0; v < n; ++v) first[uf.Find(v)] = std::min(first[uf.Find(v)], v);
  std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> q;
  for (int r : reps) {
    if (indeg[r] == 0) q.push({first[r], r});
  }
  std::vector<int> number(n, -1);
  Contraction out;
  while (!q.empty()) {
    int r = q.top().second;
    q.pop();
    number[r] = out.num_clusters++;
    for (int s : succ[r]) {
      if (--indeg[s] == 0) q.push({first[s], s});
    }
  }
  out.cluster_of.resize(n);
  for (int v = 0; v < n; ++v) out.cluster_of[v] = number[uf.Find(v)];
  return out;
}

}  // namespace kiln
