// Helpers for plugins written in C++ on top of the C ABI: the error object, turning
// absl::Status into it, and a guard so no C++ exception ever crosses an entry point.
// Header-only and private to plugins (the core never includes it).
#pragma once

#include <exception>
#include <new>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "kiln_plugin_api.h"

// The plugin-side definition of the opaque error handle.
struct KILN_Error {
  KILN_ErrorCode code;
  std::string message;
};

namespace kiln::plugin_support {

// Out of memory while reporting an error: a static object keeps the failure visible.
inline KILN_Error* OutOfMemoryError() {
  static KILN_Error oom{KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory"};
  return &oom;
}

inline KILN_Error* MakeError(KILN_ErrorCode code, std::string message) {
  try {
    return new KILN_Error{code, std::move(message)};
  } catch (...) {
    return OutOfMemoryError();
  }
}

inline KILN_Error* MakeError(const absl::Status& status) {
  if (status.ok()) return nullptr;
  return MakeError(static_cast<KILN_ErrorCode>(status.code()), std::string(status.message()));
}

inline void DestroyError(KILN_Error* error) {
  if (error != OutOfMemoryError()) delete error;  // the static fallback is never freed
}
inline const char* ErrorMessage(const KILN_Error* error) { return error->message.c_str(); }
inline KILN_ErrorCode ErrorCode(const KILN_Error* error) { return error->code; }

// Runs `body` (returning KILN_Error*), converting any escaping exception into an error.
template <typename F>
KILN_Error* Guard(const char* entry, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return MakeError(KILN_ERROR_RESOURCE_EXHAUSTED, std::string(entry) + ": out of host memory");
  } catch (const std::exception& e) {
    return MakeError(KILN_ERROR_INTERNAL, std::string(entry) + ": " + e.what());
  } catch (...) {
    return MakeError(KILN_ERROR_INTERNAL, std::string(entry) + ": unknown C++ exception");
  }
}

// Rejects args structs from a caller older than the fields this plugin needs.
template <typename Args>
KILN_Error* CheckArgs(const Args* args, size_t min_size, const char* entry) {
  if (args == nullptr)
    return MakeError(KILN_ERROR_INVALID_ARGUMENT, std::string(entry) + ": null args");
  if (args->struct_size < min_size) {
    return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                     std::string(entry) + ": args struct_size " +
                         std::to_string(args->struct_size) + " is smaller than the " +
                         std::to_string(min_size) + " this plugin needs");
  }
  return nullptr;
}

}  // namespace kiln::plugin_support
