// Which collective ops a device library can run as one call per operand, and with what.
#include "plugins/gpu_nvptx/device_collective.h"

#include "hlo/collectives/reduction.h"
#include "hlo/collectives/replica_groups.h"
#include "hlo/computation.h"

namespace kiln::gpu {
namespace {

// True when cutting `s` along dimension `d` gives pieces that each lie in one contiguous
// run of memory (every dimension before `d` is 1), as NCCL's gather and scatter lay them.
bool PiecesContiguous(const Shape& s, int64_t d) {
  if (d < 0 || d >= s.rank()) return false;
  for (int64_t k = 0; k < d; ++k)
    if (s.dimensions(k) != 1) return false;
  return true;
}

}  // namespace

absl::StatusOr<std::optional<DeviceCollective>> DescribeDeviceCollective(const HloInstruction& h,
                                                                         const Communicator& c) {
  DeviceCollective dc;
  switch (h.opcode()) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
      dc.op = DeviceCollective::Op::kAllReduce;
      break;
    case HloOpcode::kAllGather:
      dc.op = DeviceCollective::Op::kAllGather;
      break;
    case HloOpcode::kReduceScatter:
      dc.op = DeviceCollective::Op::kReduceScatter;
      break;
    default:
      return std::nullopt;
  }
  if (h.operands().empty()) return std::nullopt;
  if (dc.op != DeviceCollective::Op::kAllGather) {
    if (h.called_computations().empty()) return std::nullopt;
    std::optional<ReductionKind> kind = MatchReductionKind(*h.called_computations()[0]);
    if (!kind) return std::nullopt;
    dc.reduction = *kind;
  }
  absl::StatusOr<std::vector<int>> group = CollectiveGroup(h, c.grid(), c.device_id());
  if (!group.ok()) return group.status();
  dc.group = *std::move(group);
  const size_t n = dc.group.size();
  dc.type = h.operand(0)->shape().element_type();
  for (const HloInstruction* o : h.operands()) {
    const Shape& s = o->shape();
    if (s.IsTuple() || s.element_type() != dc.type) return std::nullopt;
    const size_t count = static_cast<size_t>(s.num_elements());
    dc.in_counts.push_back(count);
    switch (dc.op) {
      case DeviceCollective::Op::kAllReduce:
        dc.out_counts.push_back(count);
        break;
      case DeviceCollective::Op::kAllGather:
        if (h.dimensions().size() != 1 || !PiecesContiguous(s, h.dimensions()[0]))
          return std::nullopt;
        dc.out_counts.push_back(count * n);
        break;
      case DeviceCollective::Op::kReduceScatter:
        if (h.dimensions().size() != 1 || !PiecesContiguous(s, h.dimensions()[0]) ||
            s.dimensions(h.dimensions()[0]) % static_cast<int64_t>(n) != 0)
          return std::nullopt;
        dc.out_counts.push_back(count / n);
        break;
    }
  }
  return dc;
}

}  // namespace kiln::gpu
