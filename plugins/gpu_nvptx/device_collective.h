// A collective op of a run on several devices, described for a device library (NCCL) that
// moves device memory itself: which group, which reduction, and per operand a contiguous
// array in and out. Only the ops such a library does as one call per operand are described
// (all-reduce, all-gather and reduce-scatter whose pieces are contiguous); the rest run on
// the host evaluator through the run's transport. LLVM- and CUDA-free.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/collectives/communicator.h"
#include "hlo/instruction.h"

namespace kiln::gpu {

struct DeviceCollective {
  enum class Op { kAllReduce, kAllGather, kReduceScatter };
  Op op = Op::kAllReduce;
  std::vector<int> group;  // global device ids, in the group's order (rank = position)
  ReductionKind reduction = ReductionKind::kSum;  // all-reduce and reduce-scatter
  PrimitiveType type = PrimitiveType::F32;        // every operand's
  // Elements of each operand (in) and of each result (out): all-gather's out is in x group
  // size, reduce-scatter's in / group size.
  std::vector<size_t> in_counts, out_counts;
};

// `h` as a DeviceCollective for the caller `c` (its device id and grid), or nullopt when it is
// not one (another op, tuple operands, a reducer that is no single add/multiply/min/max/and/or,
// operands of different types, pieces not contiguous in row-major order). Errors: a group the
// module's replica groups cannot give for this caller.
absl::StatusOr<std::optional<DeviceCollective>> DescribeDeviceCollective(const HloInstruction& h,
                                                                         const Communicator& c);

}  // namespace kiln::gpu
