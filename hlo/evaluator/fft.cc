// The fft opcode (FFT, IFFT, RFFT, IRFFT over the last len(fft_length) dimensions), computed
// in complex<double>: radix-2 for power-of-two lengths, Bluestein's chirp convolution through
// radix-2 transforms otherwise (n log n either way).
#include "hlo/evaluator/fft.h"

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_util.h"

namespace kiln::eval {
namespace {

using cd = std::complex<double>;

// a * b without std::complex's operator*, which at -O2 calls __muldc3 per product (for its
// NaN and infinity rules) and was most of the time of a transform.
inline cd Mul(cd a, cd b) {
  return cd(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

// exp(sign 2 pi i k / n) for k < n, each from its own angle (no accumulated rounding).
std::vector<cd> Twiddles(size_t n, int sign) {
  std::vector<cd> w(n);
  for (size_t k = 0; k < n; ++k)
    w[k] = std::polar(
        1.0, sign * 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n));
  return w;
}

// The transforms of one length and direction, with their tables made once for all the
// lines of an axis.
class Plan1D {
 public:
  Plan1D(size_t n, int sign) : n_(n) {
    if (n <= 1) return;
    if ((n & (n - 1)) == 0) {
      w_ = Twiddles(n, sign);
      return;
    }
    // Bluestein: X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j]) with c[j] = exp(sign pi i j^2 / n),
    // a convolution done by power-of-two transforms of length m >= 2n - 1.
    m_ = 1;
    while (m_ < 2 * n - 1) m_ <<= 1;
    chirp_.resize(n);
    for (size_t j = 0; j < n; ++j) {
      const size_t j2 = (j * j) % (2 * n);  // exp is 2n-periodic in j^2: keeps the angle exact
      chirp_[j] = std::polar(
          1.0, sign * std::numbers::pi * static_cast<double>(j2) / static_cast<double>(n));
    }
    wm_ = Twiddles(m_, -1);
    wm_inv_ = Twiddles(m_, 1);
    kernel_.assign(m_, cd(0));
    kernel_[0] = std::conj(chirp_[0]);
    for (size_t j = 1; j < n; ++j) kernel_[j] = kernel_[m_ - j] = std::conj(chirp_[j]);
    Radix2(kernel_, wm_);
  }

  // In place; unscaled.
  void Run(std::vector<cd>& x) {
    if (n_ <= 1) return;
    if (m_ == 0) return Radix2(x, w_);
    buf_.assign(m_, cd(0));
    for (size_t j = 0; j < n_; ++j) buf_[j] = Mul(x[j], chirp_[j]);
    Radix2(buf_, wm_);
    for (size_t k = 0; k < m_; ++k) buf_[k] = Mul(buf_[k], kernel_[k]);
    Radix2(buf_, wm_inv_);
    const double inv_m = 1.0 / static_cast<double>(m_);
    for (size_t k = 0; k < n_; ++k) x[k] = Mul(buf_[k], chirp_[k]) * inv_m;
  }

 private:
  // Iterative radix-2 of a power-of-two length, `w` its twiddles: bit-reversal permutation,
  // then butterflies.
  static void Radix2(std::vector<cd>& x, const std::vector<cd>& w) {
    const size_t n = x.size();
    for (size_t i = 1, j = 0; i < n; ++i) {
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[i], x[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      const size_t half = len / 2, step = n / len;
      for (size_t i = 0; i < n; i += len)
        for (size_t k = 0; k < half; ++k) {
          const cd u = x[i + k], v = Mul(x[i + k + half], w[k * step]);
          x[i + k] = u + v;
          x[i + k + half] = u - v;
        }
    }
  }

  size_t n_, m_ = 0;
  std::vector<cd> w_, chirp_, wm_, wm_inv_, kernel_, buf_;
};

// Transforms `data` (row-major over `dims`) along dimension `axis`, scaling by 1/n if inverse.
void TransformAxis(std::vector<cd>& data, const std::vector<int64_t>& dims, int axis,
                   bool inverse) {
  const int64_t n = dims[axis];
  int64_t inner = 1, outer = 1;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  std::vector<cd> line(n);
  Plan1D plan(static_cast<size_t>(n), inverse ? 1 : -1);
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * n * inner + in;
      for (int64_t k = 0; k < n; ++k) line[k] = data[base + k * inner];
      plan.Run(line);
      for (int64_t k = 0; k < n; ++k) data[base + k * inner] = line[k] * scale;
    }
  }
}

std::vector<cd> ToComplex(const Literal& l) {
  std::vector<cd> out(l.element_count());
  switch (l.shape().element_type()) {
    case PrimitiveType::C64: {
      auto d = l.data<std::complex<float>>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = cd(d[i].real(), d[i].imag());
      break;
    }
    case PrimitiveType::C128: {
      auto d = l.data<cd>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = d[i];
      break;
    }
    default:
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = cd(l.GetAsDouble(static_cast<int64_t>(i)), 0);
  }
  return out;
}

}  // namespace

absl::StatusOr<Literal> EvalFft(const HloInstruction& instr, Operands ops) {
  if (auto s = CheckArrayOperands(instr, ops, 1); !s.ok()) return s;
  const Literal& in = *ops[0];
  const Shape& out_shape = instr.shape();
  const std::vector<int64_t>& len = instr.attrs().fft_length;
  const int rank = in.shape().rank();
  const int k = static_cast<int>(len.size());
  const FftType type = instr.attrs().fft_type;
  if (k < 1 || k > 3 || k > rank || out_shape.rank() != rank) {
    return InvalidArgument(
        instr, absl::StrCat("fft_length must name 1 to 3 trailing dimensions of a rank-", rank,
                            " operand"));
  }
  const bool real_in = type == FftType::kRfft;
  const bool real_out = type == FftType::kIrfft;
  if (real_in != IsFloating(in.shape().element_type()) ||
      (!real_in && !IsComplex(in.shape().element_type())) ||
      real_out != IsFloating(out_shape.element_type()) ||
      (!real_out && !IsComplex(out_shape.element_type()))) {
    return InvalidArgument(instr, "fft operand/result element types do not match fft_type");
  }
  // The complex working shape: the operand's for FFT/IFFT/IRFFT, the full real length for RFFT.
  std::vector<int64_t> dims = in.shape().dimensions();
  for (int i = 0; i < k; ++i) {
    const int d = rank - k + i;
    const bool halved = (real_in || real_out) && i == k - 1;
    const int64_t expect_in = real_out && halved ? len[i] / 2 + 1 : len[i];
    const int64_t expect_out = real_in && halved ? len[i] / 2 + 1 : len[i];
    if (dims[d] != expect_in || out_shape.dimensions(d) != expect_out) {
      return InvalidArgument(
          instr, absl::StrCat("fft dimension ", d, " does not match fft_length ", len[i]));
    }
  }
  std::vector<cd> data = ToComplex(in);
  const bool inverse = type == FftType::kIfft || type == FftType::kIrfft;
  if (!real_out) {
    for (int d = rank - k; d < rank; ++d) TransformAxis(data, dims, d, inverse);
    if (real_in) {
      // Keep the first n/2+1 entries of the last dimension.
      const int64_t n = dims[rank - 1], keep = n / 2 + 1;
      std::vector<cd> cut(data.size() / n * keep);
      for (size_t row = 0; row < data.size() / n; ++row)
        for (int64_t j = 0; j < keep; ++j) cut[row * keep + j] = data[row * n + j];
      data.swap(cut);
    }
  } else {
    // Inverse over the outer FFT dimensions on the half spectrum, then extend the last
    // dimension by Hermitian symmetry and keep the real part.
    for (int d = rank - k; d < rank - 1; ++d) TransformAxis(data, dims, d, true);
    const int64_t half = dims[rank - 1], n = len[k - 1];
    std::vector<cd> full(data.size() / half * n);
    for (size_t row = 0; row < data.size() / half; ++row) {
      for (int64_t j = 0; j < n; ++j) {
        full[row * n + j] = j < half ? data[row * half + j] : std::conj(data[row * half + (n - j)]);
      }
    }
    dims[rank - 1] = n;
    TransformAxis(full, dims, rank - 1, true);
    data.swap(full);
  }
  Literal out(out_shape);
  switch (out_shape.element_type()) {
    case PrimitiveType::C64: {
      auto d = out.data<std::complex<float>>();
      for (size_t i = 0; i < d.size(); ++i)
        d[i] = std::complex<float>(static_cast<float>(data[i].real()),
                                   static_cast<float>(data[i].imag()));
      break;
    }
    case PrimitiveType::C128: {
      auto d = out.data<cd>();
      for (size_t i = 0; i < d.size(); ++i) d[i] = data[i];
      break;
    }
    default:
      for (int64_t i = 0; i < out.element_count(); ++i) out.SetFromDouble(i, data[i].real());
  }
  return out;
}

}  // namespace kiln::eval
