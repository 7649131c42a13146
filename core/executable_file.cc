// A header line, then three length-prefixed fields: `device N\n...`, `module N\n...`,
// `executable N\n...`.
#include "core/executable_file.h"

#include <charconv>
#include <cstdint>

#include "fmt/format.h"

namespace kiln {

namespace {

constexpr std::string_view kMagic = "kiln executable file 1\n";

// `NAME LENGTH\n` then LENGTH bytes.
bool TakeField(std::string_view& in, std::string_view name, std::string_view* out) {
  if (!in.starts_with(name) || in.size() <= name.size() || in[name.size()] != ' ') return false;
  in.remove_prefix(name.size() + 1);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return false;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(in.data(), in.data() + nl, n);
  if (ec != std::errc() || end != in.data() + nl || n > in.size() - nl - 1) return false;
  *out = in.substr(nl + 1, n);
  in.remove_prefix(nl + 1 + n);
  return true;
}

}  // namespace

std::string PackExecutableFile(std::string_view device, std::string_view module_text,
                               std::string_view executable) {
  return fmt::format("{}device {}\n{}module {}\n{}executable {}\n{}", kMagic, device.size(), device,
                     module_text.size(), module_text, executable.size(), executable);
}

absl::StatusOr<std::string_view> UnpackExecutableFile(std::string_view file,
                                                      std::string_view device,
                                                      std::string_view module_text) {
  if (!file.starts_with(kMagic))
    return absl::DataLossError(
        "not a Kiln executable file (kiln run --save-executable writes them)");
  file.remove_prefix(kMagic.size());
  std::string_view saved_device, saved_module, executable;
  if (!TakeField(file, "device", &saved_device) || !TakeField(file, "module", &saved_module) ||
      !TakeField(file, "executable", &executable) || !file.empty())
    return absl::DataLossError("the executable file is truncated or damaged");
  if (saved_device != device)
    return absl::FailedPreconditionError(
        fmt::format("the executable file was saved by device {}, not {}", saved_device, device));
  if (saved_module != module_text)
    return absl::FailedPreconditionError(
        "the executable file was saved from another module (or with other core passes)");
  return executable;
}

}  // namespace kiln
