// Deterministic variable initializers (zeros, constant, counter-based random).
#include "core/graph/initializers.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fmt/format.h"

namespace kiln::graph {
namespace {

constexpr const char* kInits = "zeros, constant, uniform, normal, truncated_normal";

double FloatAttr(const Node& n, const std::string& name, double fallback) {
  const AttrValue* v = n.FindAttr(name);
  if (v == nullptr) return fallback;
  return v->f();
}

std::string InitName(const Node& n) {
  const AttrValue* v = n.FindAttr("init");
  return v == nullptr ? "zeros" : v->s();
}

// Box-Muller on the uniform pair (2i, 2i+1) of the stream.
double CounterNormal(uint64_t seed, uint64_t i) {
  const double u1 = CounterUniform(seed, 2 * i), u2 = CounterUniform(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

uint64_t Mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double CounterUniform(uint64_t seed, uint64_t i) {
  return static_cast<double>(Mix(Mix(seed) + i) >> 11) * 0x1.0p-53;
}

absl::Status CheckInitializer(const Node& var) {
  const std::string init = InitName(var);
  const bool random = init == "uniform" || init == "normal" || init == "truncated_normal";
  if (init != "zeros" && init != "constant" && !random) {
    return absl::InvalidArgumentError(
        fmt::format("unknown initializer '{}' (one of: {})", init, kInits));
  }
  if (init == "constant" && var.FindAttr("value") == nullptr) {
    return absl::InvalidArgumentError("init=\"constant\" needs a `value`");
  }
  if (random && var.FindAttr("seed") == nullptr) {
    return absl::InvalidArgumentError(fmt::format("init=\"{}\" needs a `seed`", init));
  }
  const TensorShape& shape = var.FindAttr("shape")->shape();
  if (!shape.IsFullyDefined()) {
    return absl::InvalidArgumentError(
        fmt::format("a variable's shape must be fully known, got {}", shape.ToString()));
  }
  if (const AttrValue* v = var.FindAttr("value"); v != nullptr && init == "constant") {
    const size_t count = v->AsNumbers().size();
    if (count != 1 && static_cast<int64_t>(count) != shape.num_elements()) {
      return absl::InvalidArgumentError(
          fmt::format("value has {} elements but shape {} needs {} (or one)", count,
                      shape.ToString(), shape.num_elements()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> InitialValue(const Node& var) {
  if (absl::Status s = CheckInitializer(var); !s.ok()) return s;
  const PrimitiveType dtype = var.FindAttr("dtype")->type();
  const std::vector<int64_t>& dims = var.FindAttr("shape")->shape().dims;
  Shape shape(dtype, dims);
  shape.SetDefaultLayout();
  Literal out(shape);
  const int64_t n = out.element_count();
  const std::string init = InitName(var);
  const uint64_t seed = var.FindAttr("seed") ? static_cast<uint64_t>(var.FindAttr("seed")->i()) : 0;
  if (init == "constant") {
    std::vector<double> vals = var.FindAttr("value")->AsNumbers();
    for (int64_t i = 0; i < n; ++i) out.SetFromDouble(i, vals.size() == 1 ? vals[0] : vals[i]);
  } else if (init == "uniform") {
    const double scale = FloatAttr(var, "scale", 1.0);
    for (int64_t i = 0; i < n; ++i) out.SetFromDouble(i, scale * (2 * CounterUniform(seed, i) - 1));
  } else if (init == "normal" || init == "truncated_normal") {
    const double stddev = FloatAttr(var, "stddev", 1.0);
    for (int64_t i = 0; i < n; ++i) {
      double z = CounterNormal(seed, i);
      // Truncated: redraw from index i + k*n until |z| <= 2 (k < 64; a miss then is
      // astronomically unlikely and is clamped).
      for (int64_t k = 1; init == "truncated_normal" && std::abs(z) > 2 && k < 64; ++k) {
        z = CounterNormal(seed, static_cast<uint64_t>(i + k * n));
      }
      if (init == "truncated_normal") z = std::clamp(z, -2.0, 2.0);
      out.SetFromDouble(i, stddev * z);
    }
  }  // zeros: a new Literal is zero-filled
  return out;
}

}  // namespace kiln::graph
