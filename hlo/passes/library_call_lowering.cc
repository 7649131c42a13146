// Library call lowering (see library_call_lowering.h).
#include "hlo/passes/library_call_lowering.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hlo/backend_config.h"
#include "hlo/computation.h"
#include "hlo/module.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Where the value of "key" starts (after the colon and blanks), or npos. The keys these
// configs use are unique within them.
size_t ValueAt(const std::string& json, const std::string& key) {
  const size_t k = json.find("\"" + key + "\"");
  if (k == std::string::npos) return k;
  size_t i = json.find(':', k);
  if (i == std::string::npos) return i;
  ++i;
  while (i < json.size() && json[i] == ' ') ++i;
  return i;
}

// A number, written bare or as a string ("1" and 1 both occur).
std::optional<double> Number(const std::string& json, const std::string& key) {
  size_t i = ValueAt(json, key);
  if (i == std::string::npos || i >= json.size()) return std::nullopt;
  if (json[i] == '"') ++i;
  const char* begin = json.c_str() + i;
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return v;
}

// A list of integers, each bare or a string: `["1","2"]`, `[]`.
std::optional<std::vector<int64_t>> IntList(const std::string& json, const std::string& key) {
  size_t i = ValueAt(json, key);
  if (i == std::string::npos || i >= json.size() || json[i] != '[') return std::nullopt;
  std::vector<int64_t> out;
  for (++i; i < json.size() && json[i] != ']';) {
    if (json[i] == '"' || json[i] == ',' || json[i] == ' ') {
      ++i;
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(json.c_str() + i, &end, 10);
    if (end == json.c_str() + i) return std::nullopt;
    out.push_back(v);
    i = static_cast<size_t>(end - json.c_str());
  }
  return out;
}

// Adds instructions to one computation under fresh names.
class Builder {
 public:
  Builder(HloComputation* comp, NameUniquer& names) : comp_(comp), names_(names) {}

  HloInstruction* Add(std::unique_ptr<HloInstruction> h) {
    return AddWithFreshName(comp_, std::move(h), names_);
  }
  // `value` as a scalar of `type`, broadcast to `shape`.
  HloInstruction* Splat(double value, const Shape& shape) {
    HloInstruction* c = Add(HloInstruction::CreateConstant(
        Literal::FromDoubles(Shape::Scalar(PrimitiveType::F64), {value})));
    if (shape.element_type() != PrimitiveType::F64)
      c = Add(
          HloInstruction::CreateUnary(HloOpcode::kConvert, Shape::Scalar(shape.element_type()), c));
    auto b = HloInstruction::CreateUnary(HloOpcode::kBroadcast, shape, c);
    b->mutable_attrs().has_dimensions = true;
    return Add(std::move(b));
  }
  HloInstruction* Binary(HloOpcode op, HloInstruction* a, HloInstruction* b) {
    return Add(HloInstruction::CreateBinary(op, a->shape(), a, b));
  }
  HloInstruction* Unary(HloOpcode op, HloInstruction* a) {
    return Add(HloInstruction::CreateUnary(op, a->shape(), a));
  }
  // x * scale, or x itself when scale is 1.
  HloInstruction* Scaled(HloInstruction* x, double scale) {
    return scale == 1 ? x : Binary(HloOpcode::kMultiply, x, Splat(scale, x->shape()));
  }

 private:
  HloComputation* comp_;
  NameUniquer& names_;
};

// The array a library call computes: its shape, or element 0 of its (result, scratch) tuple.
const Shape* ResultShape(const HloInstruction& call) {
  const Shape& s = call.shape();
  if (s.IsArray()) return &s;
  if (s.IsTuple() && !s.tuple_shapes().empty() && s.tuple_shapes()[0].IsArray())
    return &s.tuple_shapes()[0];
  return nullptr;
}

// `__cublas$gemm`: alpha * dot(a, b) [+ beta * c].
HloInstruction* LowerGemm(const HloInstruction& call, Builder& b) {
  const std::string json = BackendConfigText(call);
  const Shape* shape = ResultShape(call);
  if (shape == nullptr || call.operand_count() < 2 || call.operand_count() > 3) return nullptr;
  const std::optional<double> alpha = Number(json, "alpha_real");
  const std::optional<double> alpha_imag = Number(json, "alpha_imag");
  const std::optional<double> beta = Number(json, "beta");
  if (!alpha || (alpha_imag && *alpha_imag != 0)) return nullptr;
  // A fused epilogue (bias, relu, gelu) is not written out here.
  if (const size_t e = ValueAt(json, "epilogue");
      e != std::string::npos && json.compare(e, 9, "\"DEFAULT\"") != 0)
    return nullptr;
  DotDimensionNumbers dn;
  for (auto [field, key] : {std::pair{&dn.lhs_contracting_dimensions, "lhs_contracting_dimensions"},
                            std::pair{&dn.rhs_contracting_dimensions, "rhs_contracting_dimensions"},
                            std::pair{&dn.lhs_batch_dimensions, "lhs_batch_dimensions"},
                            std::pair{&dn.rhs_batch_dimensions, "rhs_batch_dimensions"}}) {
    std::optional<std::vector<int64_t>> dims = IntList(json, key);
    if (!dims) return nullptr;
    *field = *dims;
  }
  const double beta_value = beta.value_or(0);
  HloInstruction* c = call.operand_count() == 3 ? call.operand(2) : nullptr;
  // A third operand is the addend beta scales; beta without one has nothing to add.
  if (c != nullptr &&
      (beta_value == 0 || !c->shape().IsArray() || c->shape().dimensions() != shape->dimensions()))
    return nullptr;
  auto dot = std::make_unique<HloInstruction>(HloOpcode::kDot, *shape,
                                              std::vector{call.operand(0), call.operand(1)});
  dot->mutable_attrs().dot_dimension_numbers = dn;
  HloInstruction* out = b.Scaled(b.Add(std::move(dot)), *alpha);
  if (c != nullptr) out = b.Binary(HloOpcode::kAdd, out, b.Scaled(c, beta_value));
  return out;
}

// cuDNN's activation modes (stream_executor's dnn::ActivationMode numbering) lowered here.
bool KnownActivation(int mode) {
  return mode == 0 || mode == 1 || mode == 2 || mode == 3 || mode == 5;
}

HloInstruction* Activate(HloInstruction* x, int mode, Builder& b) {
  switch (mode) {
    case 0:  // none
      return x;
    case 1:  // sigmoid
      return b.Unary(HloOpcode::kLogistic, x);
    case 2:  // relu
      return b.Binary(HloOpcode::kMaximum, x, b.Splat(0, x->shape()));
    case 3: {  // relu6
      HloInstruction* r = b.Binary(HloOpcode::kMaximum, x, b.Splat(0, x->shape()));
      return b.Binary(HloOpcode::kMinimum, r, b.Splat(6, x->shape()));
    }
    case 5:  // tanh
      return b.Unary(HloOpcode::kTanh, x);
    default:  // refused by KnownActivation before anything was built
      return x;
  }
}

// `__cudnn$convForward` and `__cudnn$convBiasActivationForward`:
// activation(conv * convResultScale + side_input * sideInputScale + bias).
HloInstruction* LowerConv(const HloInstruction& call, bool fused, Builder& b) {
  const std::string json = BackendConfigText(call);
  const Shape* shape = ResultShape(call);
  const InstructionAttributes& a = call.attrs();
  const int n = call.operand_count();
  if (shape == nullptr || !a.window || !a.convolution_dimension_numbers ||
      (fused ? (n < 3 || n > 4) : n != 2))
    return nullptr;
  const int mode = static_cast<int>(Number(json, "activationMode").value_or(0));
  HloInstruction* bias = fused ? call.operand(2) : nullptr;
  HloInstruction* side = n == 4 ? call.operand(3) : nullptr;
  const int64_t feature = a.convolution_dimension_numbers->output_feature_dimension;
  if (fused && (!KnownActivation(mode) || !bias->shape().IsArray() || bias->shape().rank() != 1 ||
                bias->shape().dimensions(0) != shape->dimensions(feature)))
    return nullptr;
  if (side != nullptr &&
      (!side->shape().IsArray() || side->shape().dimensions() != shape->dimensions()))
    return nullptr;
  auto conv = std::make_unique<HloInstruction>(HloOpcode::kConvolution, *shape,
                                               std::vector{call.operand(0), call.operand(1)});
  conv->mutable_attrs().window = a.window;
  conv->mutable_attrs().convolution_dimension_numbers = a.convolution_dimension_numbers;
  conv->mutable_attrs().feature_group_count = a.feature_group_count;
  conv->mutable_attrs().batch_group_count = a.batch_group_count;
  HloInstruction* out =
      b.Scaled(b.Add(std::move(conv)), Number(json, "convResultScale").value_or(1));
  if (!fused) return out;
  if (side != nullptr) {
    const double side_scale = Number(json, "sideInputScale").value_or(0);
    if (side_scale != 0) out = b.Binary(HloOpcode::kAdd, out, b.Scaled(side, side_scale));
  }
  auto broadcast = HloInstruction::CreateUnary(HloOpcode::kBroadcast, *shape, bias);
  broadcast->mutable_attrs().dimensions = {feature};
  broadcast->mutable_attrs().has_dimensions = true;
  out = b.Binary(HloOpcode::kAdd, out, b.Add(std::move(broadcast)));
  return Activate(out, mode, b);
}

// `__cudnn$convBackwardInput` (operands: output gradient, filter) and
// `__cudnn$convBackwardFilter` (input, output gradient): the gradients of the forward
// convolution that the call's window and dim_labels describe, written as convolutions (the
// transposes JAX's autodiff writes: the input gradient convolves the output gradient, dilated
// by the strides, with the reversed filter; the filter gradient convolves the input with the
// output gradient as the window). Grouped, lhs-dilated and reversed forms stay.
HloInstruction* LowerConvBackward(const HloInstruction& call, bool filter_gradient, Builder& b) {
  const Shape* shape = ResultShape(call);
  const InstructionAttributes& a = call.attrs();
  if (shape == nullptr || call.operand_count() != 2 || !a.window ||
      !a.convolution_dimension_numbers || a.feature_group_count != 1 || a.batch_group_count != 1)
    return nullptr;
  const ConvolutionDimensionNumbers& d = *a.convolution_dimension_numbers;
  // The forward convolution's input, filter and output shapes.
  const Shape& input = filter_gradient ? call.operand(0)->shape() : *shape;
  const Shape& filter = filter_gradient ? *shape : call.operand(1)->shape();
  const Shape& output = filter_gradient ? call.operand(1)->shape() : call.operand(0)->shape();
  const size_t n = d.input_spatial_dimensions.size();
  if (a.window->dimensions.size() != n || !input.IsArray() || !filter.IsArray() ||
      !output.IsArray())
    return nullptr;
  Window w;
  for (size_t i = 0; i < n; ++i) {
    const WindowDimension& f = a.window->dimensions[i];
    if (f.base_dilation != 1 || f.window_reversal) return nullptr;
    const int64_t in = input.dimensions(d.input_spatial_dimensions[i]);
    const int64_t k = filter.dimensions(d.kernel_spatial_dimensions[i]);
    const int64_t out = output.dimensions(d.output_spatial_dimensions[i]);
    const int64_t k_dilated = (k - 1) * f.window_dilation + 1;
    const int64_t out_dilated = (out - 1) * f.stride + 1;
    WindowDimension g;
    if (filter_gradient) {
      g.size = out;
      g.stride = f.window_dilation;
      g.window_dilation = f.stride;
      g.padding_low = f.padding_low;
      g.padding_high = out_dilated - in + k_dilated - f.padding_low - 1;
    } else {
      g.size = k;
      g.window_dilation = f.window_dilation;
      g.base_dilation = f.stride;
      g.padding_low = k_dilated - 1 - f.padding_low;
      g.padding_high = in + k_dilated - 1 - out_dilated - g.padding_low;
    }
    w.dimensions.push_back(g);
  }
  ConvolutionDimensionNumbers g;
  HloInstruction* lhs = call.operand(0);
  HloInstruction* rhs = call.operand(1);
  if (filter_gradient) {  // the input's features act as its batch; the images are summed
    g.input_batch_dimension = d.input_feature_dimension;
    g.input_feature_dimension = d.input_batch_dimension;
    g.input_spatial_dimensions = d.input_spatial_dimensions;
    g.kernel_input_feature_dimension = d.output_batch_dimension;
    g.kernel_output_feature_dimension = d.output_feature_dimension;
    g.kernel_spatial_dimensions = d.output_spatial_dimensions;
    g.output_batch_dimension = d.kernel_input_feature_dimension;
    g.output_feature_dimension = d.kernel_output_feature_dimension;
    g.output_spatial_dimensions = d.kernel_spatial_dimensions;
  } else {  // the output gradient through the reversed filter, its features swapped
    g.input_batch_dimension = d.output_batch_dimension;
    g.input_feature_dimension = d.output_feature_dimension;
    g.input_spatial_dimensions = d.output_spatial_dimensions;
    g.kernel_input_feature_dimension = d.kernel_output_feature_dimension;
    g.kernel_output_feature_dimension = d.kernel_input_feature_dimension;
    g.kernel_spatial_dimensions = d.kernel_spatial_dimensions;
    g.output_batch_dimension = d.input_batch_dimension;
    g.output_feature_dimension = d.input_feature_dimension;
    g.output_spatial_dimensions = d.input_spatial_dimensions;
    auto reverse = HloInstruction::CreateUnary(HloOpcode::kReverse, rhs->shape(), rhs);
    reverse->mutable_attrs().dimensions = d.kernel_spatial_dimensions;
    reverse->mutable_attrs().has_dimensions = true;
    rhs = b.Add(std::move(reverse));
  }
  auto conv =
      std::make_unique<HloInstruction>(HloOpcode::kConvolution, *shape, std::vector{lhs, rhs});
  conv->mutable_attrs().window = w;
  conv->mutable_attrs().convolution_dimension_numbers = g;
  return b.Scaled(b.Add(std::move(conv)),
                  Number(BackendConfigText(call), "convResultScale").value_or(1));
}

// The replacement for the call: the array, or (array, zeros) for a (result, scratch) tuple.
HloInstruction* WithScratch(const HloInstruction& call, HloInstruction* array, Builder& b) {
  if (call.shape().IsArray()) return array;
  std::vector<HloInstruction*> elements = {array};
  for (size_t i = 1; i < call.shape().tuple_shapes().size(); ++i)
    elements.push_back(b.Splat(0, call.shape().tuple_shapes()[i]));
  return b.Add(std::make_unique<HloInstruction>(HloOpcode::kTuple, call.shape(), elements));
}

}  // namespace

absl::StatusOr<bool> LibraryCallLowering::Run(HloModule& module) {
  bool changed = false;
  NameUniquer names(module);
  for (HloComputation* comp : NonFusionComputations(module)) {
    Builder b(comp, names);
    bool lowered = false;
    for (HloInstruction* call : comp->MakeInstructionPostOrder()) {
      if (call->opcode() != HloOpcode::kCustomCall) continue;
      const std::string& target = call->attrs().custom_call_target;
      // A (result, scratch...) tuple of arrays, or an array: anything else stays as it is.
      if (!call->shape().IsArray()) {
        const std::vector<Shape>& parts = call->shape().tuple_shapes();
        if (!call->shape().IsTuple() || parts.empty() ||
            !std::all_of(parts.begin(), parts.end(), [](const Shape& p) { return p.IsArray(); }))
          continue;
      }
      HloInstruction* array = nullptr;
      if (target == "__cublas$gemm") {
        array = LowerGemm(*call, b);
      } else if (target == "__cudnn$convForward") {
        array = LowerConv(*call, /*fused=*/false, b);
      } else if (target == "__cudnn$convBiasActivationForward") {
        array = LowerConv(*call, /*fused=*/true, b);
      } else if (target == "__cudnn$convBackwardInput") {
        array = LowerConvBackward(*call, /*filter_gradient=*/false, b);
      } else if (target == "__cudnn$convBackwardFilter") {
        array = LowerConvBackward(*call, /*filter_gradient=*/true, b);
      }
      // What is not understood stays; nothing was built for it.
      if (array == nullptr) continue;
      HloInstruction* repl = WithScratch(*call, array, b);
      call->ReplaceAllUsesWith(repl);
      if (comp->root() == call) comp->set_root(repl);
      call->DetachOperands();
      comp->RemoveInstruction(call);
      lowered = true;
    }
    // Only a computation that gained instructions needs its text order redone.
    if (lowered) comp->SortInstructionsInPostOrder();
    changed |= lowered;
  }
  return changed;
}

}  // namespace kiln
