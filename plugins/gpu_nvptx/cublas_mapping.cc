#include "plugins/gpu_nvptx/cublas_mapping.h"

namespace kiln::gpu {

ColumnMajorGemm MapRowMajorGemm(const kernel_plan::GemmShape& g) {
  ColumnMajorGemm c;
  c.first_is_b = true;
  // B stored row-major as [k,n] (no trans) reads column-major as [n,k] = B^T: no transpose
  // needed; stored [n,k] (trans_b) reads as [k,n] = B: transpose it. Same for A.
  c.trans_first = g.trans_b;
  c.trans_second = g.trans_a;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  c.ld_first = g.trans_b ? g.k : g.n;   // row length of stored B
  c.ld_second = g.trans_a ? g.m : g.k;  // row length of stored A
  c.ldc = g.n;                          // row length of row-major C
  c.stride_first = g.k * g.n;
  c.stride_second = g.m * g.k;
  c.stride_c = g.m * g.n;
  c.batch = g.batch;
  return c;
}

}  // namespace kiln::gpu
