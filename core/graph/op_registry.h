// The op registry: for each graph op, its attribute schema, input/output counts, shape
// function, and either a lowering to HLO instructions or a host kernel (host-only ops).
// Every op is registered in exactly one place, under core/graph/ops/.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "hlo/literal.h"
#include "hlo/module.h"

namespace kiln::graph {

// What flows along an edge, as far as shapes go.
struct ValueInfo {
  PrimitiveType dtype = PrimitiveType::F32;
  TensorShape shape;
  bool operator==(const ValueInfo&) const = default;
  std::string ToString() const;  // `f32(2,3)`
};

// Output types/shapes from input ones. Errors: plain messages (the verifier adds the node).
using ShapeFn = std::function<absl::StatusOr<std::vector<ValueInfo>>(
    const Node& node, const std::vector<ValueInfo>& inputs)>;

// Handed to a lowering: the HLO values of the node's inputs (concrete shapes), the
// inferred outputs, and helpers to add instructions to the computation being built.
class LowerContext {
 public:
  LowerContext(HloModule* module, HloComputation* comp, const Node& node,
               std::vector<HloInstruction*> inputs, std::vector<ValueInfo> outputs)
      : module_(module),
        comp_(comp),
        node_(node),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)) {}

  const Node& node() const { return node_; }
  HloInstruction* input(int i) const { return inputs_[i]; }
  const std::vector<HloInstruction*>& inputs() const { return inputs_; }
  const ValueInfo& output(int i) const { return outputs_[i]; }

  HloInstruction* Add(std::unique_ptr<HloInstruction> instr);
  HloInstruction* Unary(HloOpcode op, HloInstruction* x);
  HloInstruction* Binary(HloOpcode op, HloInstruction* a, HloInstruction* b);  // same shapes
  HloInstruction* ScalarConstant(PrimitiveType t, double v);
  // Broadcasts `x` into `dims`; `mapping[i]` is the result dimension of x's dimension i.
  HloInstruction* Broadcast(HloInstruction* x, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& mapping);
  // NumPy broadcasting of `x` to `dims` (right-aligned; size-1 dimensions stretch).
  HloInstruction* BroadcastTo(HloInstruction* x, const std::vector<int64_t>& dims);
  HloInstruction* Compare(ComparisonDirection dir, HloInstruction* a, HloInstruction* b);  // pred
  HloInstruction* Convert(HloInstruction* x, PrimitiveType t);
  HloInstruction* Select(HloInstruction* pred, HloInstruction* a,
                         HloInstruction* b);  // same shapes
  HloInstruction* Iota(PrimitiveType t, const std::vector<int64_t>& dims, int64_t dim);
  // slice={[start:limit:stride]...} (positive strides).
  HloInstruction* Slice(HloInstruction* x, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& limits, const std::vector<int64_t>& strides);
  HloInstruction* Reshape(HloInstruction* x, const std::vector<int64_t>& dims);
  // reduce(x, init) over `axes` with a scalar `op` (add/maximum/...) reducer.
  HloInstruction* Reduce(HloInstruction* x, const std::vector<int64_t>& axes, HloOpcode op,
                         double init);
  // reduce-window(x, init) with a scalar `op` reducer; the padding reads as `init`.
  HloInstruction* ReduceWindow(HloInstruction* x, const Window& window, HloOpcode op, double init);
  // The scalar (a, b) -> op(a, b) computation, made once per module.
  HloComputation* ScalarReducer(HloOpcode op, PrimitiveType t);
  static Shape HloShape(PrimitiveType t, const std::vector<int64_t>& dims);

 private:
  HloModule* module_;
  HloComputation* comp_;
  const Node& node_;
  std::vector<HloInstruction*> inputs_;
  std::vector<ValueInfo> outputs_;
};

using LowerFn = std::function<absl::StatusOr<std::vector<HloInstruction*>>(LowerContext& ctx)>;
using HostKernel = std::function<absl::StatusOr<std::vector<Literal>>(
    const Node& node, const std::vector<Literal>& inputs)>;
class VariableStore;
// A host kernel that reads or updates variables (VariableV2 and the update ops).
using StatefulKernel = std::function<absl::StatusOr<std::vector<Literal>>(
    const Node& node, const std::vector<Literal>& inputs, VariableStore& variables)>;

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = false;
  bool numbers = false;  // accepts int, float or a list of either (Const's value)
};

struct OpDef {
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: any number
  int num_outputs = 1;
  std::vector<AttrSpec> attrs;
  ShapeFn shape_fn;
  LowerFn lower;                   // null for host-only ops
  HostKernel host_kernel;          // set for host-only ops
  std::string host_only_reason;    // why it cannot be compiled, e.g. "data-dependent output shape"
  StatefulKernel stateful_kernel;  // set for ops on variable state (instead of host_kernel)
  bool is_variable = false;        // its output is a reference to a variable (VariableV2)
  int num_ref_inputs = 0;  // the first inputs must be references to variables (Assign's var)
  // For ops that are compiled in some forms and host-only in others (Where: three inputs
  // lower to a select, one input has a data-dependent shape): true when `lower` applies.
  std::function<bool(const Node&)> lower_if;
  bool compilable(const Node& n) const {
    return static_cast<bool>(lower) && (!lower_if || lower_if(n));
  }
  const AttrSpec* FindAttr(const std::string& n) const;
};

class OpRegistry {
 public:
  // Every op of core/graph/ops/, registered on first use.
  static const OpRegistry& Global();
  void Register(OpDef def);
  const OpDef* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, OpDef> ops_;
};

// Helpers for shape functions.
absl::StatusOr<int64_t> AttrInt(const Node& n, const std::string& name, int64_t fallback);
bool AttrBool(const Node& n, const std::string& name, bool fallback);
// NumPy broadcasting (right-aligned, size-1 dims stretch); -1 (unknown) is compatible with all.
absl::StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b);
// Normalizes (negative -> from the end) and checks axes against `rank`; sorted, unique.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int rank);

}  // namespace kiln::graph
