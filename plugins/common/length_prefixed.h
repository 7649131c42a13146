// `LENGTH\n` then LENGTH bytes: the framing of the serialized executables the host plugin kit
// and cpu-llvm write (the core's executable file has its own, plugins and core share no code).
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace kiln::plugin_support {

// Takes the next `LENGTH\n` + bytes of `in` into `out`; false (and `in` unchanged) when
// malformed or truncated.
inline bool TakeLengthPrefixed(std::string_view& in, std::string_view* out) {
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return false;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(in.data(), in.data() + nl, n);
  if (ec != std::errc() || end != in.data() + nl || n > in.size() - nl - 1) return false;
  *out = in.substr(nl + 1, n);
  in.remove_prefix(nl + 1 + n);
  return true;
}

}  // namespace kiln::plugin_support
