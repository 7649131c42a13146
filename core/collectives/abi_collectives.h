// A Communicator offered to a plugin through the C ABI (1.4 KILN_Collectives) for one
// execute: the core's transport (in-process, or Open MPI) under the plugin's collectives.
#pragma once

#include <string>

#include "hlo/collectives/communicator.h"
#include "kiln_plugin_api.h"

namespace kiln {

class AbiCollectives {
 public:
  explicit AbiCollectives(Communicator& communicator);
  AbiCollectives(const AbiCollectives&) = delete;
  AbiCollectives& operator=(const AbiCollectives&) = delete;
  const KILN_Collectives* table() const { return &table_; }

 private:
  int32_t Report(const absl::Status& s);  // the code, keeping the message for last_error
  static AbiCollectives& Self(void* context) { return *static_cast<AbiCollectives*>(context); }
  static int32_t AllGather(void* context, const int32_t* group, size_t group_size, const void* in,
                           void* out, size_t bytes);
  static int32_t AllReduce(void* context, const int32_t* group, size_t group_size, KILN_DType dtype,
                           int32_t reduction, const void* in, void* out, size_t count,
                           uint8_t* done);
  static int32_t AllToAll(void* context, const int32_t* group, size_t group_size, const void* in,
                          void* out, size_t chunk_bytes);
  static int32_t Permute(void* context, const int32_t* group, size_t group_size,
                         const int32_t* pairs, size_t num_pairs, const void* in, void* out,
                         size_t bytes, uint8_t* received);
  static const char* LastError(void* context);

  Communicator& communicator_;
  std::string last_error_;
  KILN_Collectives table_{};
};

}  // namespace kiln
