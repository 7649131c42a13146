#include "core/collectives/abi_collectives.h"

#include <vector>

namespace kiln {
namespace {

std::vector<int> Group(const int32_t* group, size_t n) {
  return std::vector<int>(group, group + n);
}

}  // namespace

AbiCollectives::AbiCollectives(Communicator& communicator) : communicator_(communicator) {
  const DeviceGrid grid = communicator.grid();
  table_.struct_size = sizeof(table_);
  table_.context = this;
  table_.device_id = communicator.device_id();
  table_.num_replicas = grid.replicas;
  table_.num_partitions = grid.partitions;
  table_.all_gather = AllGather;
  table_.all_reduce = AllReduce;
  table_.all_to_all = AllToAll;
  table_.permute = Permute;
  table_.last_error = LastError;
}

int32_t AbiCollectives::Report(const absl::Status& s) {
  if (s.ok()) return KILN_ERROR_OK;
  last_error_ = std::string(s.message());
  return static_cast<int32_t>(s.code());
}

int32_t AbiCollectives::AllGather(void* context, const int32_t* group, size_t group_size,
                                  const void* in, void* out, size_t bytes) {
  AbiCollectives& self = Self(context);
  return self.Report(self.communicator_.AllGather(Group(group, group_size), in, out, bytes));
}

int32_t AbiCollectives::AllReduce(void* context, const int32_t* group, size_t group_size,
                                  KILN_DType dtype, int32_t reduction, const void* in, void* out,
                                  size_t count, uint8_t* done) {
  AbiCollectives& self = Self(context);
  if (reduction < 0 || reduction > static_cast<int32_t>(ReductionKind::kOr))
    return self.Report(
        absl::InvalidArgumentError("all_reduce: unknown reduction " + std::to_string(reduction)));
  absl::StatusOr<bool> r =
      self.communicator_.AllReduce(Group(group, group_size), static_cast<PrimitiveType>(dtype),
                                   static_cast<ReductionKind>(reduction), in, out, count);
  if (!r.ok()) return self.Report(r.status());
  *done = *r ? 1 : 0;
  return KILN_ERROR_OK;
}

int32_t AbiCollectives::AllToAll(void* context, const int32_t* group, size_t group_size,
                                 const void* in, void* out, size_t chunk_bytes) {
  AbiCollectives& self = Self(context);
  return self.Report(self.communicator_.AllToAll(Group(group, group_size), in, out, chunk_bytes));
}

int32_t AbiCollectives::Permute(void* context, const int32_t* group, size_t group_size,
                                const int32_t* pairs, size_t num_pairs, const void* in, void* out,
                                size_t bytes, uint8_t* received) {
  AbiCollectives& self = Self(context);
  std::vector<std::pair<int, int>> p;
  for (size_t i = 0; i < num_pairs; ++i) p.emplace_back(pairs[2 * i], pairs[2 * i + 1]);
  absl::StatusOr<bool> r = self.communicator_.Permute(Group(group, group_size), p, in, out, bytes);
  if (!r.ok()) return self.Report(r.status());
  *received = *r ? 1 : 0;
  return KILN_ERROR_OK;
}

const char* AbiCollectives::LastError(void* context) { return Self(context).last_error_.c_str(); }

}  // namespace kiln
