#include "plugins/common/abi_communicator.h"

#include <string>
#include <vector>

namespace kiln::plugin_support {
namespace {

std::vector<int32_t> Ids(std::span<const int> group) {
  return std::vector<int32_t>(group.begin(), group.end());
}

}  // namespace

absl::Status AbiCommunicator::Check(int32_t code, const char* what) const {
  if (code == KILN_ERROR_OK) return absl::OkStatus();
  const char* why = c_.last_error != nullptr ? c_.last_error(c_.context) : nullptr;
  return absl::Status(static_cast<absl::StatusCode>(code),
                      std::string(what) + ": " + (why != nullptr ? why : "the transport failed"));
}

absl::Status AbiCommunicator::AllGather(std::span<const int> group, const void* in, void* out,
                                        size_t bytes) {
  std::vector<int32_t> g = Ids(group);
  return Check(c_.all_gather(c_.context, g.data(), g.size(), in, out, bytes), "all-gather");
}

absl::StatusOr<bool> AbiCommunicator::AllReduce(std::span<const int> group, PrimitiveType type,
                                                ReductionKind kind, const void* in, void* out,
                                                size_t count) {
  std::vector<int32_t> g = Ids(group);
  uint8_t done = 0;
  absl::Status s =
      Check(c_.all_reduce(c_.context, g.data(), g.size(), static_cast<KILN_DType>(type),
                          static_cast<int32_t>(kind), in, out, count, &done),
            "all-reduce");
  if (!s.ok()) return s;
  return done != 0;
}

absl::Status AbiCommunicator::AllToAll(std::span<const int> group, const void* in, void* out,
                                       size_t chunk_bytes) {
  std::vector<int32_t> g = Ids(group);
  return Check(c_.all_to_all(c_.context, g.data(), g.size(), in, out, chunk_bytes), "all-to-all");
}

absl::StatusOr<bool> AbiCommunicator::Permute(std::span<const int> group,
                                              std::span<const std::pair<int, int>> pairs,
                                              const void* in, void* out, size_t bytes) {
  std::vector<int32_t> g = Ids(group), flat;
  for (const auto& [s, t] : pairs) flat.push_back(s), flat.push_back(t);
  uint8_t received = 0;
  absl::Status s = Check(c_.permute(c_.context, g.data(), g.size(), flat.data(), pairs.size(), in,
                                    out, bytes, &received),
                         "collective-permute");
  if (!s.ok()) return s;
  return received != 0;
}

}  // namespace kiln::plugin_support
