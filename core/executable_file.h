// The file `kiln run --save-executable` writes and `--load-executable` reads: the device that
// compiled the executable, the module it compiled (after the core passes), and the plugin's
// serialized executable (C ABI executable_serialize). The device and the module are checked
// when it is loaded, so a file for another module or device is refused with the reason.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln {

std::string PackExecutableFile(std::string_view device, std::string_view module_text,
                               std::string_view executable);

// The plugin's bytes, when `file` is well formed and was saved by `device` for
// `module_text`; otherwise an error saying which (DataLoss for a damaged file,
// FailedPrecondition for another device or module).
absl::StatusOr<std::string_view> UnpackExecutableFile(std::string_view file,
                                                      std::string_view device,
                                                      std::string_view module_text);

}  // namespace kiln
