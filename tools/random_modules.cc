// Random HLO modules per opcode family (see random_modules.h).
#include "tools/random_modules.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "fmt/format.h"
#include "fmt/ranges.h"

namespace kiln {
namespace {

// splitmix64: the same stream everywhere (std:: distributions differ between libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Coin(int percent = 50) { return Int(0, 99) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  uint64_t state_;
};

using Dims = std::vector<int64_t>;

struct Value {
  std::string name, type;
  Dims dims;
};

std::string ShapeText(const std::string& type, const Dims& dims) {
  return fmt::format("{}[{}]", type, fmt::join(dims, ","));
}
std::string ShapeText(const Value& v) { return ShapeText(v.type, v.dims); }

bool IsFloat(const std::string& t) { return t == "f16" || t == "bf16" || t == "f32" || t == "f64"; }
bool IsUnsigned(const std::string& t) { return t[0] == 'u'; }

int64_t Elements(const Dims& d) {
  return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Builds the text of one module: helper computations, then the entry (the last value is
// ROOT).
class ModuleText {
 public:
  Value Param(const std::string& type, Dims dims) {
    Value v{fmt::format("p{}", params_), type, std::move(dims)};
    lines_.push_back(fmt::format("{} = {} parameter({})", v.name, ShapeText(v), params_++));
    return v;
  }
  Value Constant(const std::string& type, const std::string& literal) {
    Value v{fmt::format("c{}", ++n_), type, {}};
    lines_.push_back(fmt::format("{} = {}[] constant({})", v.name, type, literal));
    return v;
  }
  Value Emit(const std::string& opcode, const std::string& type, Dims dims,
             const std::vector<Value>& operands, const std::string& attrs = "") {
    std::string base = opcode;
    std::replace(base.begin(), base.end(), '-', '_');
    Value v{fmt::format("{}.{}", base, ++n_), type, std::move(dims)};
    std::string ops;
    for (const Value& o : operands)
      ops += fmt::format("{}{} {}", ops.empty() ? "" : ", ", ShapeText(o), o.name);
    lines_.push_back(fmt::format("{} = {} {}({}){}", v.name, ShapeText(v), opcode, ops,
                                 attrs.empty() ? "" : ", " + attrs));
    return v;
  }
  Value Tuple(const std::vector<Value>& operands) {
    std::string shape, ops;
    for (const Value& o : operands) {
      shape += (shape.empty() ? "" : ", ") + ShapeText(o);
      ops += fmt::format("{}{} {}", ops.empty() ? "" : ", ", ShapeText(o), o.name);
    }
    Value v{fmt::format("tuple.{}", ++n_), "tuple", {}};
    lines_.push_back(fmt::format("{} = ({}) tuple({})", v.name, shape, ops));
    return v;
  }
  // A scalar computation `op(x, y)` for reduce; returns its name.
  std::string Reducer(const std::string& op, const std::string& type) {
    std::string name = fmt::format("reducer_{}_{}", op, type);
    if (std::find(reducers_.begin(), reducers_.end(), name) == reducers_.end()) {
      reducers_.push_back(name);
      helpers_ += fmt::format(
          "{0} {{\n  x = {1}[] parameter(0)\n  y = {1}[] parameter(1)\n"
          "  ROOT r = {1}[] {2}({1}[] x, {1}[] y)\n}}\n\n",
          name, type, op);
    }
    return name;
  }
  std::string Finish(const std::string& module_name) const {
    std::string out = fmt::format("HloModule {}\n\n{}ENTRY main {{\n", module_name, helpers_);
    for (size_t i = 0; i < lines_.size(); ++i) {
      out += fmt::format("  {}{}\n", i + 1 == lines_.size() ? "ROOT " : "", lines_[i]);
    }
    return out + "}\n";
  }

 private:
  std::vector<std::string> lines_, reducers_;
  std::string helpers_;
  int params_ = 0, n_ = 0;
};

const std::vector<std::string> kFloats = {"f32", "f32", "f64", "f16", "bf16"};
const std::vector<std::string> kInts = {"s8", "s32", "s64", "u8", "u32"};

struct Gen {
  Rng& rng;
  ModuleText& m;
  bool f32_only;

  std::string FloatType() { return f32_only ? "f32" : rng.Pick(kFloats); }
  std::string AnyType() {
    if (f32_only) return "f32";
    return rng.Coin(60) ? rng.Pick(kFloats) : rng.Pick(kInts);
  }
  // Rank min..max, each dimension 1..5 (rarely 0 when zero is allowed).
  Dims RandomDims(int min_rank, int max_rank, bool allow_zero = false) {
    Dims d(static_cast<size_t>(rng.Int(min_rank, max_rank)));
    for (int64_t& x : d) x = allow_zero && rng.Coin(5) ? 0 : rng.Int(1, 5);
    return d;
  }

  Value Unary(const Value& x) {
    if (IsFloat(x.type)) {
      static const std::vector<std::string> ops = {
          "negate", "abs",  "exponential", "tanh", "sine", "cosine", "logistic",
          "floor",  "ceil", "sign",        "sqrt", "log",  "rsqrt"};
      std::string op = rng.Pick(ops);
      if (op == "sqrt" || op == "log" || op == "rsqrt") {
        Value a = m.Emit("abs", x.type, x.dims, {x});
        return m.Emit(op, x.type, x.dims, {a});
      }
      return m.Emit(op, x.type, x.dims, {x});
    }
    static const std::vector<std::string> int_ops = {"negate", "abs", "not", "sign"};
    std::string op = rng.Pick(int_ops);
    if (IsUnsigned(x.type) && op != "not") op = "not";
    return m.Emit(op, x.type, x.dims, {x});
  }

  Value Binary(const Value& a, const Value& b) {
    if (IsFloat(a.type)) {
      static const std::vector<std::string> ops = {"add",     "subtract", "multiply", "divide",
                                                   "maximum", "minimum",  "power",    "atan2"};
      std::string op = rng.Pick(ops);
      if (op == "power") {
        Value base = m.Emit("abs", a.type, a.dims, {a});
        return m.Emit(op, a.type, a.dims, {base, b});
      }
      return m.Emit(op, a.type, a.dims, {a, b});
    }
    if (a.type == "pred") {
      static const std::vector<std::string> ops = {"and", "or", "xor"};
      return m.Emit(rng.Pick(ops), a.type, a.dims, {a, b});
    }
    static const std::vector<std::string> ops = {"add",     "subtract", "multiply", "maximum",
                                                 "minimum", "and",      "or",       "xor"};
    return m.Emit(rng.Pick(ops), a.type, a.dims, {a, b});
  }

  void UnaryFamily() {
    Value x = m.Param(AnyType(), RandomDims(0, 3, true));
    int n = static_cast<int>(rng.Int(1, 3));
    for (int i = 0; i < n; ++i) x = Unary(x);
  }

  void BinaryFamily() {
    std::string type = f32_only ? "f32" : (rng.Coin(10) ? "pred" : AnyType());
    Dims dims = RandomDims(0, 3, true);
    Value a = m.Param(type, dims), b = m.Param(type, dims);
    Value r = Binary(a, b);
    if (rng.Coin(50)) Binary(r, rng.Coin() ? a : b);
  }

  void CompareSelectFamily() {
    std::string type = AnyType();
    Dims dims = RandomDims(0, 3);
    Value a = m.Param(type, dims), b = m.Param(type, dims);
    static const std::vector<std::string> dirs = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    Value c = m.Emit("compare", "pred", dims, {a, b}, "direction=" + rng.Pick(dirs));
    Value s = m.Emit("select", type, dims, {c, a, b});
    if (rng.Coin()) m.Tuple({c, s});
  }

  void BroadcastFamily() {
    Value x = m.Param(AnyType(), RandomDims(0, 2));
    size_t out_rank = x.dims.size() + static_cast<size_t>(rng.Int(1, 2));
    // Choose which output dimensions the operand's map to (increasing).
    std::vector<int64_t> positions(out_rank);
    std::iota(positions.begin(), positions.end(), 0);
    while (positions.size() > x.dims.size()) {
      positions.erase(positions.begin() + rng.Int(0, static_cast<int64_t>(positions.size()) - 1));
    }
    Dims out(out_rank);
    for (size_t i = 0; i < out_rank; ++i) out[i] = rng.Int(1, 4);
    for (size_t i = 0; i < positions.size(); ++i)
      out[static_cast<size_t>(positions[i])] = x.dims[i];
    m.Emit("broadcast", x.type, out, {x},
           fmt::format("dimensions={{{}}}", fmt::join(positions, ",")));
  }

  void ReshapeFamily() {
    Value x = m.Param(AnyType(), RandomDims(0, 3));
    int64_t n = Elements(x.dims);
    Dims out;
    while (n > 1) {
      std::vector<int64_t> divisors;
      for (int64_t d = 2; d <= n; ++d) {
        if (n % d == 0) divisors.push_back(d);
      }
      int64_t d = rng.Coin(30) ? n : rng.Pick(divisors);
      out.push_back(d);
      n /= d;
      if (rng.Coin(20)) out.push_back(1);
    }
    if (out.empty() && rng.Coin()) out = {1, 1};
    std::reverse(out.begin(), out.end());
    m.Emit("reshape", x.type, out, {x});
  }

  void TransposeFamily() {
    Value x = m.Param(AnyType(), RandomDims(2, 4));
    std::vector<int64_t> perm(x.dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i) {
      std::swap(perm[i - 1], perm[static_cast<size_t>(rng.Int(0, static_cast<int64_t>(i) - 1))]);
    }
    Dims out;
    for (int64_t p : perm) out.push_back(x.dims[static_cast<size_t>(p)]);
    m.Emit("transpose", x.type, out, {x}, fmt::format("dimensions={{{}}}", fmt::join(perm, ",")));
  }

  void ReduceFamily() {
    static const std::vector<std::string> types = {"f32", "f64", "s32", "s64"};
    std::string type = f32_only ? "f32" : rng.Pick(types);
    Value x = m.Param(type, RandomDims(1, 3, true));
    static const std::vector<std::string> ops = {"add", "maximum", "minimum", "multiply"};
    std::string op = rng.Pick(ops);
    std::string init = op == "add" ? "0" : op == "multiply" ? "1" : "";
    if (op == "maximum")
      init = IsFloat(type) ? "-inf" : type == "s32" ? "-2147483648" : "-9223372036854775808";
    if (op == "minimum")
      init = IsFloat(type) ? "inf" : type == "s32" ? "2147483647" : "9223372036854775807";
    Value c = m.Constant(type, init);
    std::vector<int64_t> reduced;
    Dims out;
    for (size_t d = 0; d < x.dims.size(); ++d) {
      if (rng.Coin(60)) {
        reduced.push_back(static_cast<int64_t>(d));
      } else {
        out.push_back(x.dims[d]);
      }
    }
    std::string reducer = m.Reducer(op, type);
    m.Emit("reduce", type, out, {x, c},
           fmt::format("dimensions={{{}}}, to_apply={}", fmt::join(reduced, ","), reducer));
  }

  void SliceFamily() {
    Value x = m.Param(AnyType(), RandomDims(1, 3));
    std::vector<std::string> ranges;
    Dims out;
    for (int64_t d : x.dims) {
      int64_t start = rng.Int(0, d - 1), limit = rng.Int(start + 1, d), stride = rng.Int(1, 2);
      ranges.push_back(fmt::format("[{}:{}:{}]", start, limit, stride));
      out.push_back((limit - start + stride - 1) / stride);
    }
    m.Emit("slice", x.type, out, {x}, fmt::format("slice={{{}}}", fmt::join(ranges, ", ")));
  }

  void ConcatenateFamily() {
    std::string type = AnyType();
    Dims dims = RandomDims(1, 3);
    size_t axis = static_cast<size_t>(rng.Int(0, static_cast<int64_t>(dims.size()) - 1));
    std::vector<Value> parts;
    Dims out = dims;
    out[axis] = 0;
    int n = static_cast<int>(rng.Int(2, 3));
    for (int i = 0; i < n; ++i) {
      Dims d = dims;
      d[axis] = rng.Int(1, 4);
      out[axis] += d[axis];
      parts.push_back(m.Param(type, d));
    }
    m.Emit("concatenate", type, out, parts, fmt::format("dimensions={{{}}}", axis));
  }

  void DotFamily() {
    static const std::vector<std::string> types = {"f32", "f32", "f64", "s32"};
    std::string type = f32_only ? "f32" : rng.Pick(types);
    int64_t mm = rng.Int(1, 6), k = rng.Int(1, 8), n = rng.Int(1, 6), b = rng.Int(1, 3);
    switch (rng.Int(0, 2)) {
      case 0: {  // matrix x matrix
        Value l = m.Param(type, {mm, k}), r = m.Param(type, {k, n});
        m.Emit("dot", type, {mm, n}, {l, r}, "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
        break;
      }
      case 1: {  // vector x matrix
        Value l = m.Param(type, {k}), r = m.Param(type, {k, n});
        m.Emit("dot", type, {n}, {l, r}, "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
        break;
      }
      default: {  // batched
        Value l = m.Param(type, {b, mm, k}), r = m.Param(type, {b, k, n});
        m.Emit("dot", type, {b, mm, n}, {l, r},
               "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
               "rhs_contracting_dims={1}");
        break;
      }
    }
  }

  void ConvertFamily() {
    Dims dims = RandomDims(0, 3);
    if (f32_only) {
      Value x = m.Param("f32", dims);
      m.Emit("convert", "f32", dims, {x});
      return;
    }
    // Pairs whose result is defined everywhere for the inputs MakeRandomLiteral makes.
    static const std::vector<std::pair<std::string, std::string>> pairs = {
        {"f32", "f64"},  {"f64", "f32"},  {"f32", "f16"}, {"f32", "bf16"}, {"f16", "f32"},
        {"bf16", "f32"}, {"f64", "f16"},  {"s32", "f32"}, {"s8", "f64"},   {"u8", "f32"},
        {"s32", "s64"},  {"s64", "s32"},  {"u8", "s32"},  {"s8", "u8"},    {"pred", "s32"},
        {"pred", "f32"}, {"s32", "pred"}, {"f32", "s32"}, {"f64", "s64"},  {"f32", "pred"}};
    auto [from, to] = rng.Pick(pairs);
    Value x = m.Param(from, dims);
    // float -> int of values in [-1, 1): floor first so no conversion rounds a fraction.
    if (IsFloat(from) && !IsFloat(to) && to != "pred") x = m.Emit("floor", from, dims, {x});
    m.Emit("convert", to, dims, {x});
  }

  void IotaFamily() {
    static const std::vector<std::string> types = {"s32", "f32", "u8", "s64", "f64"};
    std::string type = f32_only ? "f32" : rng.Pick(types);
    Dims dims = RandomDims(1, 3);
    int64_t axis = rng.Int(0, static_cast<int64_t>(dims.size()) - 1);
    Value i = m.Emit("iota", type, dims, {}, fmt::format("iota_dimension={}", axis));
    if (rng.Coin()) m.Emit("add", type, dims, {i, m.Param(type, dims)});
  }

  void DynamicSliceFamily() {
    Value x = m.Param(AnyType(), RandomDims(1, 3));
    std::vector<Value> starts;
    Dims sizes;
    for (int64_t d : x.dims) sizes.push_back(rng.Int(1, d));
    bool update = rng.Coin();
    Value u;
    if (update) u = m.Param(x.type, sizes);
    for (size_t i = 0; i < x.dims.size(); ++i) {
      // Out-of-range starts are clamped: both parameters ([-4, 4)) and constants test it.
      starts.push_back(rng.Coin()
                           ? m.Param("s32", {})
                           : m.Constant("s32", fmt::format("{}", rng.Int(-2, x.dims[i] + 2))));
    }
    std::vector<Value> operands = {x};
    if (update) {
      operands.push_back(u);
      operands.insert(operands.end(), starts.begin(), starts.end());
      m.Emit("dynamic-update-slice", x.type, x.dims, operands);
    } else {
      operands.insert(operands.end(), starts.begin(), starts.end());
      m.Emit("dynamic-slice", x.type, sizes, operands,
             fmt::format("dynamic_slice_sizes={{{}}}", fmt::join(sizes, ",")));
    }
  }

  void PadFamily() {
    Value x = m.Param(AnyType(), RandomDims(1, 3));
    Value v = rng.Coin() ? m.Param(x.type, {}) : m.Constant(x.type, IsFloat(x.type) ? "0.5" : "3");
    std::vector<std::string> config;
    Dims out;
    for (int64_t d : x.dims) {
      int64_t lo = rng.Int(-1, 2), hi = rng.Int(0, 2), interior = rng.Int(0, 2);
      int64_t size = lo + hi + d + std::max<int64_t>(d - 1, 0) * interior;
      if (size < 1) lo = 0, size = hi + d + std::max<int64_t>(d - 1, 0) * interior;
      config.push_back(fmt::format("{}_{}_{}", lo, hi, interior));
      out.push_back(size);
    }
    m.Emit("pad", x.type, out, {x, v}, fmt::format("padding={}", fmt::join(config, "x")));
  }

  void ReverseFamily() {
    Value x = m.Param(AnyType(), RandomDims(1, 3));
    std::vector<int64_t> dims;
    for (size_t d = 0; d < x.dims.size(); ++d) {
      if (rng.Coin()) dims.push_back(static_cast<int64_t>(d));
    }
    if (dims.empty()) dims.push_back(0);
    m.Emit("reverse", x.type, x.dims, {x}, fmt::format("dimensions={{{}}}", fmt::join(dims, ",")));
  }

  // An f32 chain of elementwise ops over two or three parameters of one shape, sometimes
  // ending in a transpose or a reduction.
  void MixedFamily() {
    Dims dims = RandomDims(1, 3);
    std::vector<Value> pool;
    int params = static_cast<int>(rng.Int(2, 3));
    for (int i = 0; i < params; ++i) pool.push_back(m.Param("f32", dims));
    int steps = static_cast<int>(rng.Int(3, 6));
    Value last = pool.back();
    for (int i = 0; i < steps; ++i) {
      last = rng.Coin(40) ? Unary(rng.Pick(pool)) : Binary(rng.Pick(pool), rng.Pick(pool));
      pool.push_back(last);
    }
    if (rng.Coin(15) && dims.size() >= 2) {
      Dims out = {dims[1], dims[0]};
      for (size_t d = 2; d < dims.size(); ++d) out.push_back(dims[d]);
      std::vector<int64_t> perm = {1, 0};
      for (size_t d = 2; d < dims.size(); ++d) perm.push_back(static_cast<int64_t>(d));
      m.Emit("transpose", "f32", out, {last},
             fmt::format("dimensions={{{}}}", fmt::join(perm, ",")));
    } else if (rng.Coin(15)) {
      Value c = m.Constant("f32", "0");
      Dims out(dims.begin() + 1, dims.end());
      m.Emit("reduce", "f32", out, {last, c},
             fmt::format("dimensions={{0}}, to_apply={}", m.Reducer("add", "f32")));
    }
  }
};

}  // namespace

const std::vector<std::string>& RandomModuleFamilies() {
  static const std::vector<std::string> families = {
      "unary",         "binary", "compare-select", "broadcast", "reshape", "transpose",
      "reduce",        "slice",  "concatenate",    "dot",       "convert", "iota",
      "dynamic-slice", "pad",    "reverse",        "mixed"};
  return families;
}

std::string RandomModule(const std::string& family, uint64_t seed, bool f32_only) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the family: the same on every machine
  for (char c : family) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  Rng rng(seed ^ h);
  ModuleText m;
  Gen g{rng, m, f32_only};
  if (family == "unary")
    g.UnaryFamily();
  else if (family == "binary")
    g.BinaryFamily();
  else if (family == "compare-select")
    g.CompareSelectFamily();
  else if (family == "broadcast")
    g.BroadcastFamily();
  else if (family == "reshape")
    g.ReshapeFamily();
  else if (family == "transpose")
    g.TransposeFamily();
  else if (family == "reduce")
    g.ReduceFamily();
  else if (family == "slice")
    g.SliceFamily();
  else if (family == "concatenate")
    g.ConcatenateFamily();
  else if (family == "dot")
    g.DotFamily();
  else if (family == "convert")
    g.ConvertFamily();
  else if (family == "iota")
    g.IotaFamily();
  else if (family == "dynamic-slice")
    g.DynamicSliceFamily();
  else if (family == "pad")
    g.PadFamily();
  else if (family == "reverse")
    g.ReverseFamily();
  else if (family == "mixed")
    g.MixedFamily();
  else
    throw std::invalid_argument("unknown module family " + family);
  std::string name = family;
  std::replace(name.begin(), name.end(), '-', '_');
  return m.Finish(fmt::format("{}_{}", name, seed));
}

}  // namespace kiln
