// The walkable module of ABI 1.6 (KILN_ModuleView in plugin_api/kiln_plugin_api.h): a
// read-only C view of a parsed, verified HloModule that the core hands to a plugin's
// capability and compile, so a backend written in C needs no HLO parser.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "kiln_plugin_api.h"

namespace kiln {

class ModuleView {
 public:
  // Parses and verifies `text`; the error names what is wrong where.
  static absl::StatusOr<std::unique_ptr<ModuleView>> FromText(std::string_view text);
  // A view of `module`, which must outlive it (constants point into its literals).
  explicit ModuleView(const HloModule& module);
  ModuleView(const ModuleView&) = delete;
  ModuleView& operator=(const ModuleView&) = delete;

  const KILN_ModuleView* get() const { return &module_; }

 private:
  const KILN_ShapeView* AddShape(const Shape& shape);
  // Where each computation of the module, and each instruction of the one being added, is.
  struct Indices {
    absl::flat_hash_map<const HloComputation*, size_t> computations;
    absl::flat_hash_map<const HloInstruction*, size_t> instructions;
  };
  const KILN_InstructionView* AddInstruction(const HloInstruction& instr, const Indices& index);

  std::unique_ptr<HloModule> owned_;  // when made from text
  KILN_ModuleView module_{};
  // Storage the view points into: deques keep every element where it was put.
  std::deque<std::string> strings_;
  std::deque<std::vector<int64_t>> ints_;
  std::deque<std::vector<size_t>> indices_;
  std::deque<KILN_ShapeView> shapes_;
  std::deque<std::vector<const KILN_ShapeView*>> shape_lists_;
  std::deque<std::vector<KILN_Attribute>> attribute_lists_;
  std::deque<KILN_InstructionView> instructions_;
  std::deque<std::vector<const KILN_InstructionView*>> instruction_lists_;
  std::deque<KILN_ComputationView> computations_;
  std::vector<const KILN_ComputationView*> computation_list_;
};

}  // namespace kiln
