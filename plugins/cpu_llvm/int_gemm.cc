// The integer GEMM (int_gemm.h): blocks of B's columns and of the depth are packed into
// panels of NR columns, strips of MR rows of A into [depth][MR], and an MR x NR register tile
// of C accumulates one broadcast A element times one row of a B panel per step, in unsigned
// arithmetic (wrapping, as HLO's integer dots). One source, compiled three times with GCC's
// vector extensions at the vector width of AVX-512, AVX2 and SSE2; the CPU picks one.
#include "plugins/cpu_llvm/int_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::cpu {
namespace {

using kernel_plan::GemmShape;
using kernel_plan::GemmType;

// Depth and columns per packed B block: 256 x 512 u32 is 512 KB, within Zen 4's and
// Skylake-SP's 1 MB L2.
constexpr int64_t kDepthBlock = 256;
constexpr int64_t kColumnBlock = 512;

template <typename T, int VB>
struct VecOf {
  typedef T type __attribute__((vector_size(VB)));
};

// One batch entry's block of C = op(A) op(B).
template <typename T>
struct Block {
  const T* a;
  const T* b;
  T* c;
  int64_t m, n, k;
  bool trans_a, trans_b;
  int64_t r0, r1, c0, c1;
  T* apack;  // kDepthBlock * MR
  T* bpack;  // kDepthBlock * kColumnBlock rounded up to NR
  T A(int64_t r, int64_t p) const { return trans_a ? a[p * m + r] : a[r * k + p]; }
  T B(int64_t p, int64_t col) const { return trans_b ? b[col * k + p] : b[p * n + col]; }
};

// c[MR rows, ldc apart][NR] += sum over p < kc of ap[p][r] * bp[p][0..NR).
template <typename T, int VB, int MR>
[[gnu::always_inline]] inline void MicroTile(int64_t kc, const T* ap, const T* bp, T* c,
                                             int64_t ldc) {
  using V = typename VecOf<T, VB>::type;
  constexpr int64_t L = VB / sizeof(T);
  V acc[MR][2];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 2; ++v) std::memcpy(&acc[r][v], c + r * ldc + v * L, VB);
  for (int64_t p = 0; p < kc; ++p) {
    V b0, b1;
    std::memcpy(&b0, bp + p * 2 * L, VB);
    std::memcpy(&b1, bp + p * 2 * L + L, VB);
    for (int r = 0; r < MR; ++r) {
      const T a = ap[p * MR + r];
      acc[r][0] += a * b0;
      acc[r][1] += a * b1;
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 2; ++v) std::memcpy(c + r * ldc + v * L, &acc[r][v], VB);
}

template <typename T, int VB, int MR>
[[gnu::always_inline]] inline void Gemm(const Block<T>& x) {
  constexpr int64_t NR = 2 * VB / sizeof(T);
  const int64_t ldc = x.n;
  for (int64_t r = x.r0; r < x.r1; ++r) std::fill(x.c + r * ldc + x.c0, x.c + r * ldc + x.c1, T{0});
  T edge[MR * NR];  // a partial tile at the block's right or bottom edge
  for (int64_t jc = x.c0; jc < x.c1; jc += kColumnBlock) {
    const int64_t nc = std::min(kColumnBlock, x.c1 - jc);
    const int64_t panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < x.k; pc += kDepthBlock) {
      const int64_t kc = std::min(kDepthBlock, x.k - pc);
      for (int64_t q = 0; q < panels; ++q) {
        T* panel = x.bpack + q * kc * NR;
        const int64_t width = std::min(NR, nc - q * NR);
        for (int64_t p = 0; p < kc; ++p)
          for (int64_t j = 0; j < NR; ++j)
            panel[p * NR + j] = j < width ? x.B(pc + p, jc + q * NR + j) : T{0};
      }
      for (int64_t ir = x.r0; ir < x.r1; ir += MR) {
        const int64_t mr = std::min<int64_t>(MR, x.r1 - ir);
        for (int64_t p = 0; p < kc; ++p)
          for (int64_t r = 0; r < MR; ++r)
            x.apack[p * MR + r] = r < mr ? x.A(ir + r, pc + p) : T{0};
        for (int64_t q = 0; q < panels; ++q) {
          T* c = x.c + ir * ldc + jc + q * NR;
          const int64_t width = std::min(NR, nc - q * NR);
          if (mr == MR && width == NR) {
            MicroTile<T, VB, MR>(kc, x.apack, x.bpack + q * kc * NR, c, ldc);
            continue;
          }
          std::fill(edge, edge + MR * NR, T{0});
          for (int64_t r = 0; r < mr; ++r)
            std::copy(c + r * ldc, c + r * ldc + width, edge + r * NR);
          MicroTile<T, VB, MR>(kc, x.apack, x.bpack + q * kc * NR, edge, NR);
          for (int64_t r = 0; r < mr; ++r)
            std::copy(edge + r * NR, edge + r * NR + width, c + r * ldc);
        }
      }
    }
  }
}

// The three builds of each; the 64-bit vector multiply (vpmullq) is AVX-512DQ's.
__attribute__((target("avx512f,avx512dq"))) void Gemm512(const Block<uint32_t>& x) {
  Gemm<uint32_t, 64, 8>(x);
}
__attribute__((target("avx512f,avx512dq"))) void Gemm512(const Block<uint64_t>& x) {
  Gemm<uint64_t, 64, 8>(x);
}
__attribute__((target("avx2"))) void Gemm256(const Block<uint32_t>& x) { Gemm<uint32_t, 32, 4>(x); }
__attribute__((target("avx2"))) void Gemm256(const Block<uint64_t>& x) { Gemm<uint64_t, 32, 4>(x); }
void Gemm128(const Block<uint32_t>& x) { Gemm<uint32_t, 16, 4>(x); }
void Gemm128(const Block<uint64_t>& x) { Gemm<uint64_t, 16, 4>(x); }

template <typename T>
void Run(const GemmShape& g, const void* a, const void* b, void* out, int64_t i, int64_t r0,
         int64_t r1, int64_t c0, int64_t c1) {
  static const int width = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
                               ? 512
                           : __builtin_cpu_supports("avx2") ? 256
                                                            : 128;
  // Sized for the widest tiles (8 rows; 64 bytes x 2 columns per row of a panel).
  constexpr int64_t kMaxRows = 8, kMaxColumns = 2 * 64 / sizeof(T);
  thread_local std::vector<T> apack(kDepthBlock * kMaxRows);
  thread_local std::vector<T> bpack(kDepthBlock *
                                    ((kColumnBlock + kMaxColumns - 1) / kMaxColumns * kMaxColumns));
  Block<T> x{static_cast<const T*>(a) + i * g.m * g.k,
             static_cast<const T*>(b) + i * g.k * g.n,
             static_cast<T*>(out) + i * g.m * g.n,
             g.m,
             g.n,
             g.k,
             g.trans_a,
             g.trans_b,
             r0,
             r1,
             c0,
             c1,
             apack.data(),
             bpack.data()};
  if (width == 512)
    Gemm512(x);
  else if (width == 256)
    Gemm256(x);
  else
    Gemm128(x);
}

}  // namespace

void IntGemmBlock(const GemmShape& g, const void* a, const void* b, void* out, int64_t i,
                  int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (g.type == GemmType::kI64)
    Run<uint64_t>(g, a, b, out, i, r0, r1, c0, c1);
  else
    Run<uint32_t>(g, a, b, out, i, r0, r1, c0, c1);
}

}  // namespace kiln::cpu
