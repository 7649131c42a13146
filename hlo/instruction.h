// One HLO instruction: opcode, result shape, operands, called computations and attributes.
// A single class for all opcodes (no subclass per opcode): the attributes an opcode uses
// live in InstructionAttributes, which the parser fills and the printer prints.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hlo/attributes.h"
#include "hlo/literal.h"
#include "hlo/opcode.h"
#include "hlo/shape.h"

namespace kiln {

class HloComputation;

struct InstructionAttributes {
  std::optional<Literal> literal;  // constant
  int64_t parameter_number = -1;   // parameter
  int64_t tuple_index = -1;        // get-tuple-element `index=`
  // broadcast, transpose, reduce, reverse, concatenate, sort, map, reduce-precision ...:
  // the `dimensions={...}` attribute.
  std::vector<int64_t> dimensions;
  bool has_dimensions = false;  // `dimensions={}` printed even when empty
  int64_t iota_dimension = -1;
  // slice: `slice={[start:limit:stride], ...}`
  std::vector<int64_t> slice_starts, slice_limits, slice_strides;
  std::vector<int64_t> dynamic_slice_sizes;  // dynamic-slice `dynamic_slice_sizes=`
  PaddingConfig padding_config;              // pad
  std::optional<DotDimensionNumbers> dot_dimension_numbers;
  std::optional<Window> window;  // convolution, reduce-window, select-and-scatter
  std::optional<ConvolutionDimensionNumbers> convolution_dimension_numbers;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  std::optional<ComparisonDirection> comparison_direction;
  ComparisonType comparison_type = ComparisonType::kDefault;
  std::optional<GatherDimensionNumbers> gather_dimension_numbers;
  std::vector<int64_t> gather_slice_sizes;
  bool indices_are_sorted = false;
  std::optional<ScatterDimensionNumbers> scatter_dimension_numbers;
  bool unique_indices = false;
  FusionKind fusion_kind = FusionKind::kLoop;
  std::string custom_call_target;
  int64_t exponent_bits = 0, mantissa_bits = 0;                    // reduce-precision
  RandomDistribution distribution = RandomDistribution::kUniform;  // rng
  RandomAlgorithm rng_algorithm = RandomAlgorithm::kDefault;       // rng-bit-generator
  int64_t feature_index = -1;                                      // batch-norm-*
  float epsilon = 0;                                               // batch-norm-*
  bool is_stable = false;                                          // sort
  int64_t num_carries = 0;                                         // scan
  bool is_reverse = false, is_associative = false;                 // scan
  int64_t k = 0;                                                   // topk
  bool largest = true;                                             // topk
  // triangular-solve
  bool left_side = false, lower = false, unit_diagonal = false;
  TriangularSolveTranspose transpose_a = TriangularSolveTranspose::kNoTranspose;
  FftType fft_type = FftType::kFft;
  std::vector<int64_t> fft_length;
  // async-start/-update/-done written with XLA's shorthand for one wrapped instruction
  // (`all-to-all-start(...)`): the wrapped opcode, so the text prints back unchanged.
  std::optional<HloOpcode> async_wrapped_opcode;
  // Attributes Kiln keeps but does not interpret (metadata, sharding, backend_config,
  // frontend_attributes, replica_groups, ...), as `name` and the verbatim text after `=`,
  // in the order they appeared. They print back unchanged.
  std::vector<std::pair<std::string, std::string>> extra;

  const std::string* FindExtra(std::string_view name) const;
  void SetExtra(std::string_view name, std::string value);
};

class HloInstruction {
 public:
  HloInstruction(HloOpcode opcode, Shape shape, std::vector<HloInstruction*> operands = {});
  HloInstruction(const HloInstruction&) = delete;
  HloInstruction& operator=(const HloInstruction&) = delete;

  // Convenience constructors for code (tests, passes) that builds HLO directly.
  static std::unique_ptr<HloInstruction> CreateParameter(int64_t number, Shape shape,
                                                         std::string name);
  static std::unique_ptr<HloInstruction> CreateConstant(Literal literal);
  static std::unique_ptr<HloInstruction> CreateUnary(HloOpcode op, Shape shape,
                                                     HloInstruction* operand);
  static std::unique_ptr<HloInstruction> CreateBinary(HloOpcode op, Shape shape,
                                                      HloInstruction* lhs, HloInstruction* rhs);

  HloOpcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  const Shape& shape() const { return shape_; }
  Shape* mutable_shape() { return &shape_; }

  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(int i) const { return operands_[i]; }
  int operand_count() const { return static_cast<int>(operands_.size()); }
  // Replaces operand i, keeping the user lists of both old and new operand right.
  void ReplaceOperandWith(int i, HloInstruction* new_operand);
  void AppendOperand(HloInstruction* operand);
  const std::vector<HloInstruction*>& users() const { return users_; }
  int user_count() const { return static_cast<int>(users_.size()); }
  // Makes every user of this instruction use `other` instead.
  void ReplaceAllUsesWith(HloInstruction* other);
  // Detaches from operands (call before deleting).
  void DetachOperands();

  const std::vector<HloInstruction*>& control_predecessors() const { return control_preds_; }
  void AddControlPredecessor(HloInstruction* p) { control_preds_.push_back(p); }

  // Called computations in XLA's positional convention:
  // while {condition, body}; conditional {branches...}; select-and-scatter {select, scatter};
  // fusion {fused computation}; everything else {to_apply} (reduce, map, sort, call, ...).
  const std::vector<HloComputation*>& called_computations() const { return called_; }
  void AppendCalledComputation(HloComputation* c) { called_.push_back(c); }
  void set_called_computation(int i, HloComputation* c) { called_[i] = c; }
  HloComputation* to_apply() const { return called_.empty() ? nullptr : called_[0]; }
  HloComputation* while_condition() const { return called_[0]; }
  HloComputation* while_body() const { return called_[1]; }
  HloComputation* fused_computation() const { return called_[0]; }
  HloComputation* select() const { return called_[0]; }
  HloComputation* scatter() const { return called_[1]; }

  const InstructionAttributes& attrs() const { return attrs_; }
  InstructionAttributes& mutable_attrs() { return attrs_; }
  // Shorthands for the most used attributes.
  const Literal& literal() const { return *attrs_.literal; }
  int64_t parameter_number() const { return attrs_.parameter_number; }
  int64_t tuple_index() const { return attrs_.tuple_index; }
  const std::vector<int64_t>& dimensions() const { return attrs_.dimensions; }

  HloComputation* parent() const { return parent_; }
  void set_parent(HloComputation* c) { parent_ = c; }

  // The instruction in XLA text form, e.g. `%add.1 = f32[2]{0} add(f32[2]{0} %a, ...)`.
  std::string ToString() const;

 private:
  HloOpcode opcode_;
  std::string name_;
  Shape shape_;
  std::vector<HloInstruction*> operands_;
  std::vector<HloInstruction*> users_;
  std::vector<HloInstruction*> control_preds_;
  std::vector<HloComputation*> called_;
  InstructionAttributes attrs_;
  HloComputation* parent_ = nullptr;
};

std::string_view ComparisonDirectionString(ComparisonDirection d);
std::string_view FusionKindString(FusionKind k);

}  // namespace kiln
