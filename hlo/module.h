// A module: computations (callees before callers), one of them the entry.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hlo/computation.h"

namespace kiln {

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  HloComputation* AddComputation(std::unique_ptr<HloComputation> c, bool is_entry = false);
  // Removes computations no instruction calls (other than the entry).
  void RemoveUnusedComputations();

  HloComputation* entry() const { return entry_; }
  void set_entry(HloComputation* c) { entry_ = c; }
  std::vector<HloComputation*> computations() const;
  // Callees before callers; every computation reachable from the entry, then the rest.
  std::vector<HloComputation*> MakeComputationPostOrder() const;
  HloComputation* FindComputation(std::string_view name) const;

  // Header attributes (`entry_computation_layout`, `input_output_alias`, `is_scheduled`,
  // ...), name and verbatim value, in text order; printed back unchanged.
  std::vector<std::pair<std::string, std::string>>& attributes() { return attributes_; }
  const std::vector<std::pair<std::string, std::string>>& attributes() const { return attributes_; }
  // The FileNames/FunctionNames/FileLocations/StackFrames tables, verbatim (may be empty).
  const std::string& stack_frame_tables() const { return stack_frame_tables_; }
  void set_stack_frame_tables(std::string t) { stack_frame_tables_ = std::move(t); }

  // A stable hash of the printed module (for caches).
  uint64_t Fingerprint() const;

  std::string ToString() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloComputation>> computations_;
  HloComputation* entry_ = nullptr;
  std::vector<std::pair<std::string, std::string>> attributes_;
  std::string stack_frame_tables_;
};

}  // namespace kiln
