#include "plugins/cpu_llvm/complex_library.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>

namespace kiln::cpu {
namespace {

float Magnitude(std::complex<float> z) {
  const double re = z.real(), im = z.imag();
  if (std::isinf(re) || std::isinf(im)) return std::numeric_limits<float>::infinity();
  return static_cast<float>(std::sqrt(re * re + im * im));
}

double Magnitude(std::complex<double> z) { return std::hypot(z.real(), z.imag()); }

template <typename R>
void Abs(const std::complex<R>* in, R* out, int64_t n, ThreadPool* pool) {
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = Magnitude(in[i]);
  };
  if (pool != nullptr && pool->size() > 1 && n >= (int64_t{1} << 15))
    pool->ParallelFor(n, run);
  else
    run(0, n);
}

}  // namespace

bool IsComplexLibraryCall(const HloInstruction& h) {
  if (h.opcode() != HloOpcode::kAbs || h.operand_count() != 1) return false;
  const Shape& in = h.operand(0)->shape();
  const Shape& out = h.shape();
  if (!in.IsArray() || !out.IsArray() || in.is_dynamic() || in.dimensions() != out.dimensions())
    return false;
  return (in.element_type() == PrimitiveType::C64 && out.element_type() == PrimitiveType::F32) ||
         (in.element_type() == PrimitiveType::C128 && out.element_type() == PrimitiveType::F64);
}

void RunComplexLibrary(const HloInstruction& h, const Literal& in, Literal& out, ThreadPool* pool) {
  if (in.shape().element_type() == PrimitiveType::C64)
    Abs(in.data<std::complex<float>>().data(), out.data<float>().data(), in.element_count(), pool);
  else
    Abs(in.data<std::complex<double>>().data(), out.data<double>().data(), in.element_count(),
        pool);
}

}  // namespace kiln::cpu
