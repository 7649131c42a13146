// Variable values across runs, with staged updates committed at the end of a run.
#include "core/graph/variable_store.h"

#include "core/graph/initializers.h"
#include "fmt/format.h"

namespace kiln::graph {

absl::StatusOr<Literal> VariableStore::Read(const Node& var) {
  auto it = values_.find(var.name);
  if (it == values_.end()) {
    absl::StatusOr<Literal> init = InitialValue(var);
    if (!init.ok()) return init.status();
    it = values_.emplace(var.name, std::move(*init)).first;
  }
  return it->second;
}

absl::StatusOr<Literal> VariableStore::Current(const std::string& name) const {
  if (auto it = staged_.find(name); it != staged_.end()) return it->second;
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  return absl::InternalError(fmt::format("variable {} has not been read yet", name));
}

absl::Status VariableStore::Stage(const std::string& name, Literal value) {
  auto it = values_.find(name);
  if (it == values_.end()) {
    return absl::InternalError(fmt::format("variable {} has not been read yet", name));
  }
  const Shape& want = it->second.shape();
  if (value.shape().element_type() != want.element_type() ||
      value.shape().dimensions() != want.dimensions()) {
    return absl::InvalidArgumentError(fmt::format("new value {} does not match variable {} {}",
                                                  value.shape().ToString(false), name,
                                                  want.ToString(false)));
  }
  staged_.insert_or_assign(name, std::move(value));
  return absl::OkStatus();
}

void VariableStore::Commit() {
  for (auto& [name, v] : staged_) values_.insert_or_assign(name, std::move(v));
  staged_.clear();
}

void VariableStore::Discard() { staged_.clear(); }

const Literal* VariableStore::Find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

}  // namespace kiln::graph
