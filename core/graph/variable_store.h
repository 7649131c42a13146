// The state a graph keeps across runs: the value of every VariableV2, by node name.
// Variables live on the host: a read hands the value to its consumers (clusters take it as
// an input literal), and the update ops (Assign, AssignAdd, AssignSub,
// ApplyGradientDescent) stage new values that become visible when the run commits, so a
// failed run leaves the variables as they were.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "hlo/literal.h"

namespace kiln::graph {

class VariableStore {
 public:
  // The committed value of `var` (a VariableV2 node), initialized from its `init`
  // attributes on first use.
  absl::StatusOr<Literal> Read(const Node& var);
  // The value an update builds on: staged earlier in this run, else committed.
  absl::StatusOr<Literal> Current(const std::string& name) const;
  // Stages a new value; its type and shape must be the variable's.
  absl::Status Stage(const std::string& name, Literal value);
  void Commit();   // staged values become the variables' values (end of a successful run)
  void Discard();  // drops staged values (start of a run, after a failed one)

  const Literal* Find(const std::string& name) const;  // committed value, or null
  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, Literal> values_;
  std::map<std::string, Literal> staged_;
};

}  // namespace kiln::graph
