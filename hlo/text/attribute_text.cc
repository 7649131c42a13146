// Typed instruction attributes: one reader per attribute syntax, and the printer that writes
// them back in a fixed order.
#include "hlo/text/attribute_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "hlo/text/literal_text.h"

namespace kiln::hlo_text {
namespace {

using Ints = std::vector<int64_t>;

// `{1,2,3}` or `{}`.
absl::Status ReadIntList(Cursor& c, std::string_view what, Ints* out) {
  out->clear();
  if (absl::Status s = c.ExpectF('{', "'{{' starting {}", what); !s.ok()) return s;
  if (c.TryConsume('}')) return absl::OkStatus();
  while (true) {
    int64_t v = 0;
    if (absl::Status s = c.ReadIntF(&v, "an integer in {}", what); !s.ok()) return s;
    out->push_back(v);
    if (c.TryConsume('}')) return absl::OkStatus();
    if (absl::Status s = c.ExpectF(',', "',' or '}}' in {}", what); !s.ok()) return s;
  }
}

// `3x3x1`: one integer per dimension.
absl::Status ReadXList(Cursor& c, std::string_view what, Ints* out) {
  out->clear();
  while (true) {
    int64_t v = 0;
    if (absl::Status s = c.ReadIntF(&v, "an integer in {}", what); !s.ok()) return s;
    out->push_back(v);
    if (c.Peek() != 'x') return absl::OkStatus();
    c.Advance();
  }
}

// `lo_hi` pairs (window pad) or `lo_hi_interior` triples (pad), separated by `x`.
absl::Status ReadPadList(Cursor& c, std::string_view what, int parts,
                         std::vector<std::vector<int64_t>>* out) {
  out->clear();
  while (true) {
    std::vector<int64_t> dim;
    for (int i = 0; i < parts; ++i) {
      if (i > 0) {
        if (c.Peek() != '_') {
          if (parts == 3 && i == 2) break;  // interior padding is optional
          return c.Expected(fmt::format("'_' in {}", what));
        }
        c.Advance();
      }
      int64_t v = 0;
      if (absl::Status s = c.ReadIntF(&v, "an integer in {}", what); !s.ok()) return s;
      dim.push_back(v);
    }
    while (static_cast<int>(dim.size()) < parts) dim.push_back(0);
    out->push_back(std::move(dim));
    if (c.Peek() != 'x') return absl::OkStatus();
    c.Advance();
  }
}

absl::Status ReadWord(Cursor& c, std::string_view what, std::string_view* out) {
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  std::string_view w = c.PeekWord();
  if (w.empty() || c.Peek() == '%') return c.Expected(what);
  c.Advance(w.size());
  *out = w;
  return absl::OkStatus();
}

// Reads a word and maps it through `names` (index = enum value).
template <typename E, size_t N>
absl::Status ReadEnum(Cursor& c, std::string_view what, const std::string_view (&names)[N],
                      E* out) {
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  std::string_view w = c.Peek() == '%' ? std::string_view() : c.PeekWord();
  for (size_t i = 0; i < N; ++i) {
    if (w == names[i]) {
      c.Advance(w.size());
      *out = static_cast<E>(i);
      return absl::OkStatus();
    }
  }
  return c.Expected(fmt::format("{} ({})", what, fmt::join(names, ", ")));
}

constexpr std::string_view kDirections[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
constexpr std::string_view kComparisonTypes[] = {"DEFAULT", "FLOAT", "TOTALORDER", "SIGNED",
                                                 "UNSIGNED"};
constexpr std::string_view kFusionKinds[] = {"kLoop", "kInput", "kOutput", "kCustom"};
constexpr std::string_view kDistributions[] = {"rng_uniform", "rng_normal"};
constexpr std::string_view kRngAlgorithms[] = {"rng_default", "rng_three_fry", "rng_philox"};
constexpr std::string_view kFftTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
constexpr std::string_view kTransposes[] = {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};

// `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}`.
absl::Status ReadWindow(Cursor& c, Window* out) {
  size_t at = c.pos();
  if (absl::Status s = c.Expect('{', "'{' starting the window"); !s.ok()) return s;
  Ints size, stride, lhs, rhs, reversal;
  std::vector<std::vector<int64_t>> pad;
  bool have[6] = {};
  while (!c.TryConsume('}')) {
    std::string_view key;
    if (absl::Status s = ReadWord(c,
                                  "a window field (size, stride, pad, lhs_dilate, "
                                  "rhs_dilate, rhs_reversal) or '}'",
                                  &key);
        !s.ok())
      return s;
    size_t key_at = c.pos() - key.size();
    if (absl::Status s = c.ExpectF('=', "'=' after window field '{}'", key); !s.ok()) return s;
    int index = -1;
    absl::Status s;
    if (key == "size") {
      index = 0;
      s = ReadXList(c, "window size", &size);
    } else if (key == "stride") {
      index = 1;
      s = ReadXList(c, "window stride", &stride);
    } else if (key == "pad") {
      index = 2;
      s = ReadPadList(c, "window pad", 2, &pad);
    } else if (key == "lhs_dilate") {
      index = 3;
      s = ReadXList(c, "lhs_dilate", &lhs);
    } else if (key == "rhs_dilate") {
      index = 4;
      s = ReadXList(c, "rhs_dilate", &rhs);
    } else if (key == "rhs_reversal") {
      index = 5;
      s = ReadXList(c, "rhs_reversal", &reversal);
    } else {
      return c.ErrorAt(key_at, fmt::format("unknown window field '{}' (expected size, stride, "
                                           "pad, lhs_dilate, rhs_dilate or rhs_reversal)",
                                           key));
    }
    if (!s.ok()) return s;
    if (have[index]) return c.ErrorAt(key_at, fmt::format("window field '{}' given twice", key));
    have[index] = true;
  }
  if (!have[0] && (have[1] || have[2] || have[3] || have[4] || have[5]))
    return c.ErrorAt(at, "window has fields but no size=");
  size_t n = size.size();
  auto check = [&](size_t got, std::string_view field) -> absl::Status {
    if (got != n && got != 0) {
      return c.ErrorAt(at,
                       fmt::format("window {} has {} dimensions but size has {}", field, got, n));
    }
    return absl::OkStatus();
  };
  for (auto [got, field] : {std::pair<size_t, std::string_view>{stride.size(), "stride"},
                            {pad.size(), "pad"},
                            {lhs.size(), "lhs_dilate"},
                            {rhs.size(), "rhs_dilate"},
                            {reversal.size(), "rhs_reversal"}}) {
    if (absl::Status s = check(got, field); !s.ok()) return s;
  }
  out->dimensions.assign(n, WindowDimension{});
  for (size_t i = 0; i < n; ++i) {
    WindowDimension& d = out->dimensions[i];
    d.size = size[i];
    if (!stride.empty()) d.stride = stride[i];
    if (!pad.empty()) {
      d.padding_low = pad[i][0];
      d.padding_high = pad[i][1];
    }
    if (!lhs.empty()) d.base_dilation = lhs[i];
    if (!rhs.empty()) d.window_dilation = rhs[i];
    if (!reversal.empty()) d.window_reversal = reversal[i] != 0;
  }
  return absl::OkStatus();
}

// One operand's labels of `dim_labels`, e.g. `b01f`: the positions of the two letter
// dimensions and of each spatial dimension (digit = spatial index); '?' is a position that is
// none of them (XLA writes it in custom-calls' labels).
absl::Status ReadLabels(Cursor& c, std::string_view what, char a, char b, int64_t* pos_a,
                        int64_t* pos_b, Ints* spatial) {
  size_t at = c.pos();
  *pos_a = *pos_b = -1;
  std::vector<int64_t> by_digit(10, -1);
  int64_t position = 0;
  int digits = 0;
  while (!c.AtEnd()) {
    char ch = c.Peek();
    if (ch == a || ch == b) {
      int64_t* slot = ch == a ? pos_a : pos_b;
      if (*slot >= 0) return c.Error(fmt::format("label '{}' appears twice in {}", ch, what));
      *slot = position;
    } else if (IsDigit(ch)) {
      if (by_digit[ch - '0'] >= 0)
        return c.Error(fmt::format("label '{}' appears twice in {}", ch, what));
      by_digit[ch - '0'] = position;
      ++digits;
    } else if (ch != '?') {
      break;
    }
    c.Advance();
    ++position;
  }
  if (*pos_a < 0 || *pos_b < 0) {
    return c.ErrorAt(at, fmt::format("{} must contain '{}' and '{}', found '{}'", what, a, b,
                                     c.text().substr(at, c.pos() - at)));
  }
  spatial->clear();
  for (int i = 0; i < digits; ++i) {
    if (by_digit[i] < 0)
      return c.ErrorAt(at, fmt::format("{} has spatial labels that skip '{}'", what, i));
    spatial->push_back(by_digit[i]);
  }
  return absl::OkStatus();
}

// `b01f_01io->b01f`.
absl::Status ReadDimLabels(Cursor& c, ConvolutionDimensionNumbers* out) {
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  size_t at = c.pos();
  ConvolutionDimensionNumbers d;
  if (absl::Status s = ReadLabels(c, "the input labels", 'b', 'f', &d.input_batch_dimension,
                                  &d.input_feature_dimension, &d.input_spatial_dimensions);
      !s.ok())
    return s;
  if (c.Peek() != '_') return c.Expected("'_' after the input labels of dim_labels");
  c.Advance();
  if (absl::Status s =
          ReadLabels(c, "the kernel labels", 'i', 'o', &d.kernel_input_feature_dimension,
                     &d.kernel_output_feature_dimension, &d.kernel_spatial_dimensions);
      !s.ok())
    return s;
  if (c.Peek() != '-' || c.Peek(1) != '>') return c.Expected("'->' in dim_labels");
  c.Advance(2);
  if (absl::Status s = ReadLabels(c, "the output labels", 'b', 'f', &d.output_batch_dimension,
                                  &d.output_feature_dimension, &d.output_spatial_dimensions);
      !s.ok())
    return s;
  if (d.kernel_spatial_dimensions.size() != d.input_spatial_dimensions.size() ||
      d.output_spatial_dimensions.size() != d.input_spatial_dimensions.size())
    return c.ErrorAt(at, "dim_labels: input, kernel and output have different spatial ranks");
  *out = std::move(d);
  return absl::OkStatus();
}

// `{[0:2:1], [0:10]}`.
absl::Status ReadSlice(Cursor& c, InstructionAttributes* a) {
  a->slice_starts.clear();
  a->slice_limits.clear();
  a->slice_strides.clear();
  if (absl::Status s = c.Expect('{', "'{' starting slice"); !s.ok()) return s;
  if (c.TryConsume('}')) return absl::OkStatus();
  while (true) {
    if (absl::Status s = c.Expect('[', "'[' starting a slice dimension"); !s.ok()) return s;
    int64_t start = 0, limit = 0, stride = 1;
    if (absl::Status s = c.ReadInt("a slice start", &start); !s.ok()) return s;
    if (absl::Status s = c.Expect(':', "':' in a slice dimension"); !s.ok()) return s;
    if (absl::Status s = c.ReadInt("a slice limit", &limit); !s.ok()) return s;
    if (c.TryConsume(':')) {
      if (absl::Status s = c.ReadInt("a slice stride", &stride); !s.ok()) return s;
    }
    if (absl::Status s = c.Expect(']', "']' closing a slice dimension"); !s.ok()) return s;
    a->slice_starts.push_back(start);
    a->slice_limits.push_back(limit);
    a->slice_strides.push_back(stride);
    if (c.TryConsume('}')) return absl::OkStatus();
    if (absl::Status s = c.Expect(',', "',' or '}' in slice"); !s.ok()) return s;
  }
}

absl::Status ReadFloat(Cursor& c, std::string_view what, float* out) {
  if (absl::Status s = c.SkipSpace(); !s.ok()) return s;
  size_t start = c.pos();
  while (!c.AtEnd() && (IsNameChar(c.Peek()) || c.Peek() == '+' || c.Peek() == '-')) c.Advance();
  std::string_view tok = c.text().substr(start, c.pos() - start);
  const char* b = tok.data();
  if (!tok.empty() && tok[0] == '+') ++b;
  auto [p, ec] = std::from_chars(b, tok.data() + tok.size(), *out);
  if (tok.empty() || ec != std::errc() || p != tok.data() + tok.size()) {
    c.set_pos(start);
    return c.Expected(what);
  }
  return absl::OkStatus();
}

bool IsBatchNorm(HloOpcode op) {
  return op == HloOpcode::kBatchNormTraining || op == HloOpcode::kBatchNormInference ||
         op == HloOpcode::kBatchNormGrad;
}

std::string IntList(const Ints& v) { return "{" + absl::StrJoin(v, ",") + "}"; }

std::string WindowText(const Window& w) {
  std::string out = "{";
  if (w.dimensions.empty()) return "{}";
  auto join = [&](auto get) {
    std::string s;
    for (size_t i = 0; i < w.dimensions.size(); ++i) {
      if (i) s += "x";
      s += get(w.dimensions[i]);
    }
    return s;
  };
  auto any = [&](auto pred) {
    for (const auto& d : w.dimensions)
      if (pred(d)) return true;
    return false;
  };
  out += "size=" + join([](const WindowDimension& d) { return fmt::format("{}", d.size); });
  if (any([](const WindowDimension& d) { return d.stride != 1; }))
    out += " stride=" + join([](const WindowDimension& d) { return fmt::format("{}", d.stride); });
  if (any([](const WindowDimension& d) { return d.padding_low != 0 || d.padding_high != 0; }))
    out += " pad=" + join([](const WindowDimension& d) {
             return fmt::format("{}_{}", d.padding_low, d.padding_high);
           });
  if (any([](const WindowDimension& d) { return d.base_dilation != 1; }))
    out += " lhs_dilate=" +
           join([](const WindowDimension& d) { return fmt::format("{}", d.base_dilation); });
  if (any([](const WindowDimension& d) { return d.window_dilation != 1; }))
    out += " rhs_dilate=" +
           join([](const WindowDimension& d) { return fmt::format("{}", d.window_dilation); });
  if (any([](const WindowDimension& d) { return d.window_reversal; }))
    out += " rhs_reversal=" +
           join([](const WindowDimension& d) { return d.window_reversal ? "1" : "0"; });
  return out + "}";
}

// One operand's labels; positions no label names print as '?' (XLA's form for a custom-call's
// dims that are neither batch, feature nor spatial), so the rank is the last named position's.
std::string LabelsText(int64_t a_pos, char a, int64_t b_pos, char b, const Ints& spatial) {
  int64_t last = std::max(a_pos, b_pos);
  for (int64_t p : spatial) last = std::max(last, p);
  const size_t rank = static_cast<size_t>(std::max<int64_t>(last, -1) + 1);
  std::string s(rank, '?');
  if (a_pos >= 0 && static_cast<size_t>(a_pos) < rank) s[a_pos] = a;
  if (b_pos >= 0 && static_cast<size_t>(b_pos) < rank) s[b_pos] = b;
  for (size_t i = 0; i < spatial.size(); ++i)
    if (spatial[i] >= 0 && static_cast<size_t>(spatial[i]) < rank)
      s[spatial[i]] = static_cast<char>('0' + i);
  return s;
}

std::string DimLabelsText(const ConvolutionDimensionNumbers& d) {
  return LabelsText(d.input_batch_dimension, 'b', d.input_feature_dimension, 'f',
                    d.input_spatial_dimensions) +
         "_" +
         LabelsText(d.kernel_input_feature_dimension, 'i', d.kernel_output_feature_dimension, 'o',
                    d.kernel_spatial_dimensions) +
         "->" +
         LabelsText(d.output_batch_dimension, 'b', d.output_feature_dimension, 'f',
                    d.output_spatial_dimensions);
}

const char* Bool(bool b) { return b ? "true" : "false"; }

// `{mode=default}`, `{mode=highest}` or `{tolerance={atol=N,rtol=N,ulps=N}}` (any of the
// three keys), spaces removed.
bool IsResultAccuracy(std::string_view v) {
  if (v == "{mode=default}" || v == "{mode=highest}") return true;
  constexpr std::string_view kOpen = "{tolerance={", kClose = "}}";
  if (v.size() < kOpen.size() + kClose.size() || v.substr(0, kOpen.size()) != kOpen ||
      v.substr(v.size() - kClose.size()) != kClose)
    return false;
  v = v.substr(kOpen.size(), v.size() - kOpen.size() - kClose.size());
  while (true) {
    size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return false;
    std::string_view key = item.substr(0, eq), number = item.substr(eq + 1);
    if (key != "atol" && key != "rtol" && key != "ulps") return false;
    if (number.empty() || number.find_first_not_of("+-.0123456789eE") != std::string_view::npos)
      return false;
    if (comma == std::string_view::npos) break;
    v = v.substr(comma + 1);
  }
  return true;
}

}  // namespace

absl::Status CheckVerbatimAttribute(std::string_view name, HloOpcode op, Cursor c) {
  std::string value;
  for (size_t i = c.pos(); i < c.end(); ++i)
    if (!std::isspace(static_cast<unsigned char>(c.text()[i]))) value += c.text()[i];
  if (name == "api_version") {
    // API_VERSION_UNSPECIFIED too: PyTorch/XLA's dumps write it (tests/hlo_corpus).
    for (const char* known :
         {"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
          "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"})
      if (value == known) return absl::OkStatus();
    return c.Error(
        fmt::format("unknown custom-call api_version '{}' (API_VERSION_UNSPECIFIED, "
                    "API_VERSION_ORIGINAL, "
                    "API_VERSION_STATUS_RETURNING, API_VERSION_STATUS_RETURNING_UNIFIED or "
                    "API_VERSION_TYPED_FFI)",
                    value));
  }
  if (name == "result_accuracy") {
    static const std::set<HloOpcode> kWithAccuracy = {
        HloOpcode::kExp,      HloOpcode::kExpm1, HloOpcode::kLog,  HloOpcode::kLog1p,
        HloOpcode::kRsqrt,    HloOpcode::kSqrt,  HloOpcode::kCbrt, HloOpcode::kTanh,
        HloOpcode::kLogistic, HloOpcode::kSin,   HloOpcode::kCos,  HloOpcode::kTan,
        HloOpcode::kErf};
    if (!kWithAccuracy.count(op))
      return c.Error(
          fmt::format("'{}' does not take result_accuracy= (only the unary "
                      "transcendental ops do)",
                      HloOpcodeString(op)));
    if (!IsResultAccuracy(value))
      return c.Error(
          fmt::format("result_accuracy must be {{mode=default|highest}} or "
                      "{{tolerance={{atol=..,rtol=..,ulps=..}}}}, found '{}'",
                      value));
  }
  return absl::OkStatus();
}

absl::Status ParseTypedAttribute(std::string_view name, HloOpcode op, Cursor c,
                                 InstructionAttributes* a, bool* typed) {
  *typed = true;
  absl::Status s;
  auto gather = [&]() -> GatherDimensionNumbers& {
    if (!a->gather_dimension_numbers) a->gather_dimension_numbers.emplace();
    return *a->gather_dimension_numbers;
  };
  auto scatter = [&]() -> ScatterDimensionNumbers& {
    if (!a->scatter_dimension_numbers) a->scatter_dimension_numbers.emplace();
    return *a->scatter_dimension_numbers;
  };
  auto dot = [&]() -> DotDimensionNumbers& {
    if (!a->dot_dimension_numbers) a->dot_dimension_numbers.emplace();
    return *a->dot_dimension_numbers;
  };
  const bool is_gather = op == HloOpcode::kGather;
  const bool is_scatter = op == HloOpcode::kScatter;
  if (name == "dimensions") {
    s = ReadIntList(c, "dimensions", &a->dimensions);
    a->has_dimensions = true;
  } else if (name == "index" && op == HloOpcode::kGetTupleElement) {
    s = c.ReadInt("a tuple index", &a->tuple_index);
  } else if (name == "iota_dimension") {
    s = c.ReadInt("an iota dimension", &a->iota_dimension);
  } else if (name == "slice") {
    s = ReadSlice(c, a);
  } else if (name == "dynamic_slice_sizes") {
    s = ReadIntList(c, "dynamic_slice_sizes", &a->dynamic_slice_sizes);
  } else if (name == "padding" && op == HloOpcode::kPad) {
    a->padding_config.clear();
    if (absl::Status sp = c.SkipSpace(); !sp.ok()) return sp;
    if (!c.AtEnd()) {
      std::vector<std::vector<int64_t>> dims;
      s = ReadPadList(c, "padding", 3, &dims);
      for (const auto& d : dims) a->padding_config.push_back({d[0], d[1], d[2]});
    }
  } else if (name == "lhs_batch_dims") {
    s = ReadIntList(c, name, &dot().lhs_batch_dimensions);
  } else if (name == "rhs_batch_dims") {
    s = ReadIntList(c, name, &dot().rhs_batch_dimensions);
  } else if (name == "lhs_contracting_dims") {
    s = ReadIntList(c, name, &dot().lhs_contracting_dimensions);
  } else if (name == "rhs_contracting_dims") {
    s = ReadIntList(c, name, &dot().rhs_contracting_dimensions);
  } else if (name == "lhs_ragged_dims") {
    s = ReadIntList(c, name, &dot().lhs_ragged_dimensions);
  } else if (name == "rhs_group_dims") {
    s = ReadIntList(c, name, &dot().rhs_group_dimensions);
  } else if (name == "window") {
    a->window.emplace();
    s = ReadWindow(c, &*a->window);
  } else if (name == "dim_labels") {
    a->convolution_dimension_numbers.emplace();
    s = ReadDimLabels(c, &*a->convolution_dimension_numbers);
  } else if (name == "feature_group_count") {
    s = c.ReadInt("a feature group count", &a->feature_group_count);
  } else if (name == "batch_group_count") {
    s = c.ReadInt("a batch group count", &a->batch_group_count);
  } else if (name == "direction") {
    ComparisonDirection d{};
    s = ReadEnum(c, "a comparison direction", kDirections, &d);
    a->comparison_direction = d;
  } else if (name == "type" && op == HloOpcode::kCompare) {
    s = ReadEnum(c, "a comparison type", kComparisonTypes, &a->comparison_type);
  } else if (name == "offset_dims" && is_gather) {
    s = ReadIntList(c, name, &gather().offset_dims);
  } else if (name == "collapsed_slice_dims" && is_gather) {
    s = ReadIntList(c, name, &gather().collapsed_slice_dims);
  } else if (name == "start_index_map" && is_gather) {
    s = ReadIntList(c, name, &gather().start_index_map);
  } else if (name == "operand_batching_dims" && is_gather) {
    s = ReadIntList(c, name, &gather().operand_batching_dims);
  } else if (name == "start_indices_batching_dims" && is_gather) {
    s = ReadIntList(c, name, &gather().start_indices_batching_dims);
  } else if (name == "slice_sizes" && is_gather) {
    s = ReadIntList(c, name, &a->gather_slice_sizes);
  } else if (name == "index_vector_dim" && (is_gather || is_scatter)) {
    s = c.ReadInt("an index vector dimension",
                  is_gather ? &gather().index_vector_dim : &scatter().index_vector_dim);
  } else if (name == "indices_are_sorted" && (is_gather || is_scatter)) {
    s = c.ReadBool("true or false", &a->indices_are_sorted);
  } else if (name == "update_window_dims" && is_scatter) {
    s = ReadIntList(c, name, &scatter().update_window_dims);
  } else if (name == "inserted_window_dims" && is_scatter) {
    s = ReadIntList(c, name, &scatter().inserted_window_dims);
  } else if (name == "scatter_dims_to_operand_dims" && is_scatter) {
    s = ReadIntList(c, name, &scatter().scatter_dims_to_operand_dims);
  } else if (name == "input_batching_dims" && is_scatter) {
    s = ReadIntList(c, name, &scatter().input_batching_dims);
  } else if (name == "scatter_indices_batching_dims" && is_scatter) {
    s = ReadIntList(c, name, &scatter().scatter_indices_batching_dims);
  } else if (name == "unique_indices" && is_scatter) {
    s = c.ReadBool("true or false", &a->unique_indices);
  } else if (name == "kind" && op == HloOpcode::kFusion) {
    s = ReadEnum(c, "a fusion kind", kFusionKinds, &a->fusion_kind);
  } else if (name == "custom_call_target" && op == HloOpcode::kCustomCall) {
    s = c.ReadQuoted("a quoted custom-call target", &a->custom_call_target);
  } else if (name == "exponent_bits" && op == HloOpcode::kReducePrecision) {
    s = c.ReadInt("a number of exponent bits", &a->exponent_bits);
  } else if (name == "mantissa_bits" && op == HloOpcode::kReducePrecision) {
    s = c.ReadInt("a number of mantissa bits", &a->mantissa_bits);
  } else if (name == "distribution" && op == HloOpcode::kRng) {
    s = ReadEnum(c, "a distribution", kDistributions, &a->distribution);
  } else if (name == "algorithm" && op == HloOpcode::kRngBitGenerator) {
    s = ReadEnum(c, "an RNG algorithm", kRngAlgorithms, &a->rng_algorithm);
  } else if (name == "feature_index" && IsBatchNorm(op)) {
    s = c.ReadInt("a feature index", &a->feature_index);
  } else if (name == "epsilon" && IsBatchNorm(op)) {
    s = ReadFloat(c, "a floating-point epsilon", &a->epsilon);
  } else if (name == "is_stable" && op == HloOpcode::kSort) {
    s = c.ReadBool("true or false", &a->is_stable);
  } else if (name == "num_carries" && op == HloOpcode::kScan) {
    s = c.ReadInt("a carry count", &a->num_carries);
  } else if (name == "is_reverse" && op == HloOpcode::kScan) {
    s = c.ReadBool("true or false", &a->is_reverse);
  } else if (name == "is_associative" && op == HloOpcode::kScan) {
    s = c.ReadBool("true or false", &a->is_associative);
  } else if (name == "k" && op == HloOpcode::kTopK) {
    s = c.ReadInt("an integer k", &a->k);
  } else if (name == "largest" && op == HloOpcode::kTopK) {
    s = c.ReadBool("true or false", &a->largest);
  } else if (name == "left_side" && op == HloOpcode::kTriangularSolve) {
    s = c.ReadBool("true or false", &a->left_side);
  } else if (name == "lower" && (op == HloOpcode::kTriangularSolve || op == HloOpcode::kCholesky)) {
    s = c.ReadBool("true or false", &a->lower);
  } else if (name == "unit_diagonal" && op == HloOpcode::kTriangularSolve) {
    s = c.ReadBool("true or false", &a->unit_diagonal);
  } else if (name == "transpose_a" && op == HloOpcode::kTriangularSolve) {
    s = ReadEnum(c, "a transpose kind", kTransposes, &a->transpose_a);
  } else if (name == "fft_type" && op == HloOpcode::kFft) {
    s = ReadEnum(c, "an FFT type", kFftTypes, &a->fft_type);
  } else if (name == "fft_length" && op == HloOpcode::kFft) {
    s = ReadIntList(c, name, &a->fft_length);
  } else {
    *typed = false;
    return absl::OkStatus();
  }
  if (!s.ok()) return s;
  if (absl::Status sp = c.SkipSpace(); !sp.ok()) return sp;
  if (!c.AtEnd()) return c.Expected(fmt::format("the end of the value of '{}'", name));
  return absl::OkStatus();
}

HloOpcode AttributeOpcode(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kAsyncStart
             ? instr.attrs().async_wrapped_opcode.value_or(instr.opcode())
             : instr.opcode();
}

void AppendTypedAttributes(const HloInstruction& instr, std::string* out) {
  ForEachTypedAttribute(instr, [out](std::string_view name, const std::string& value) {
    *out += ", ";
    *out += name;
    *out += "=";
    *out += value;
  });
}

void ForEachTypedAttribute(const HloInstruction& instr,
                           const std::function<void(std::string_view, const std::string&)>& add) {
  const InstructionAttributes& a = instr.attrs();
  const HloOpcode op = AttributeOpcode(instr);
  if (a.has_dimensions || !a.dimensions.empty()) add("dimensions", IntList(a.dimensions));
  if (op == HloOpcode::kGetTupleElement) add("index", fmt::format("{}", a.tuple_index));
  if (op == HloOpcode::kIota || a.iota_dimension >= 0)
    add("iota_dimension", fmt::format("{}", a.iota_dimension));
  if (op == HloOpcode::kSlice || !a.slice_starts.empty()) {
    std::string s = "{";
    for (size_t i = 0; i < a.slice_starts.size(); ++i) {
      if (i) s += ", ";
      int64_t limit = i < a.slice_limits.size() ? a.slice_limits[i] : 0;
      int64_t stride = i < a.slice_strides.size() ? a.slice_strides[i] : 1;
      s += fmt::format("[{}:{}", a.slice_starts[i], limit);
      if (stride != 1) s += fmt::format(":{}", stride);
      s += "]";
    }
    add("slice", s + "}");
  }
  if (op == HloOpcode::kDynamicSlice || !a.dynamic_slice_sizes.empty())
    add("dynamic_slice_sizes", IntList(a.dynamic_slice_sizes));
  if (op == HloOpcode::kPad) {
    std::string s;
    for (size_t i = 0; i < a.padding_config.size(); ++i) {
      const PaddingDimension& d = a.padding_config[i];
      if (i) s += "x";
      s += fmt::format("{}_{}", d.edge_padding_low, d.edge_padding_high);
      if (d.interior_padding != 0) s += fmt::format("_{}", d.interior_padding);
    }
    add("padding", s);
  }
  if (a.window) add("window", WindowText(*a.window));
  if (a.convolution_dimension_numbers)
    add("dim_labels", DimLabelsText(*a.convolution_dimension_numbers));
  if (a.feature_group_count != 1)
    add("feature_group_count", fmt::format("{}", a.feature_group_count));
  if (a.batch_group_count != 1) add("batch_group_count", fmt::format("{}", a.batch_group_count));
  if (a.dot_dimension_numbers) {
    const DotDimensionNumbers& d = *a.dot_dimension_numbers;
    if (!d.lhs_batch_dimensions.empty()) add("lhs_batch_dims", IntList(d.lhs_batch_dimensions));
    add("lhs_contracting_dims", IntList(d.lhs_contracting_dimensions));
    if (!d.rhs_batch_dimensions.empty()) add("rhs_batch_dims", IntList(d.rhs_batch_dimensions));
    add("rhs_contracting_dims", IntList(d.rhs_contracting_dimensions));
    if (!d.lhs_ragged_dimensions.empty()) add("lhs_ragged_dims", IntList(d.lhs_ragged_dimensions));
    if (!d.rhs_group_dimensions.empty()) add("rhs_group_dims", IntList(d.rhs_group_dimensions));
  }
  if (a.comparison_direction)
    add("direction", std::string(kDirections[static_cast<int>(*a.comparison_direction)]));
  if (a.comparison_type != ComparisonType::kDefault)
    add("type", std::string(kComparisonTypes[static_cast<int>(a.comparison_type)]));
  if (a.gather_dimension_numbers) {
    const GatherDimensionNumbers& g = *a.gather_dimension_numbers;
    add("offset_dims", IntList(g.offset_dims));
    add("collapsed_slice_dims", IntList(g.collapsed_slice_dims));
    add("start_index_map", IntList(g.start_index_map));
    if (!g.operand_batching_dims.empty())
      add("operand_batching_dims", IntList(g.operand_batching_dims));
    if (!g.start_indices_batching_dims.empty())
      add("start_indices_batching_dims", IntList(g.start_indices_batching_dims));
    add("index_vector_dim", fmt::format("{}", g.index_vector_dim));
  }
  if (op == HloOpcode::kGather || !a.gather_slice_sizes.empty())
    add("slice_sizes", IntList(a.gather_slice_sizes));
  if (a.scatter_dimension_numbers) {
    const ScatterDimensionNumbers& s = *a.scatter_dimension_numbers;
    add("update_window_dims", IntList(s.update_window_dims));
    add("inserted_window_dims", IntList(s.inserted_window_dims));
    add("scatter_dims_to_operand_dims", IntList(s.scatter_dims_to_operand_dims));
    if (!s.input_batching_dims.empty()) add("input_batching_dims", IntList(s.input_batching_dims));
    if (!s.scatter_indices_batching_dims.empty())
      add("scatter_indices_batching_dims", IntList(s.scatter_indices_batching_dims));
    add("index_vector_dim", fmt::format("{}", s.index_vector_dim));
  }
  if (a.indices_are_sorted) add("indices_are_sorted", "true");
  if (a.unique_indices) add("unique_indices", "true");
  if (op == HloOpcode::kFusion)
    add("kind", std::string(kFusionKinds[static_cast<int>(a.fusion_kind)]));
  if (op == HloOpcode::kCustomCall)
    add("custom_call_target", "\"" + EscapeString(a.custom_call_target) + "\"");
  if (op == HloOpcode::kReducePrecision) {
    add("exponent_bits", fmt::format("{}", a.exponent_bits));
    add("mantissa_bits", fmt::format("{}", a.mantissa_bits));
  }
  if (op == HloOpcode::kRng)
    add("distribution", std::string(kDistributions[static_cast<int>(a.distribution)]));
  if (op == HloOpcode::kRngBitGenerator)
    add("algorithm", std::string(kRngAlgorithms[static_cast<int>(a.rng_algorithm)]));
  if (IsBatchNorm(op)) {
    add("epsilon", FloatToText(a.epsilon));
    add("feature_index", fmt::format("{}", a.feature_index));
  }
  if (a.is_stable) add("is_stable", "true");
  if (op == HloOpcode::kScan) {
    add("num_carries", fmt::format("{}", a.num_carries));
    if (a.is_reverse) add("is_reverse", "true");
    if (a.is_associative) add("is_associative", "true");
  }
  if (op == HloOpcode::kTopK) {
    add("k", fmt::format("{}", a.k));
    add("largest", Bool(a.largest));
  }
  if (op == HloOpcode::kTriangularSolve) {
    add("left_side", Bool(a.left_side));
    add("lower", Bool(a.lower));
    add("unit_diagonal", Bool(a.unit_diagonal));
    add("transpose_a", std::string(kTransposes[static_cast<int>(a.transpose_a)]));
  }
  if (op == HloOpcode::kCholesky) add("lower", Bool(a.lower));
  if (op == HloOpcode::kFft) {
    add("fft_type", std::string(kFftTypes[static_cast<int>(a.fft_type)]));
    add("fft_length", IntList(a.fft_length));
  }
}

}  // namespace kiln::hlo_text
