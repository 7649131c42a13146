// Kiln's absl::Status as Python's `kiln.KilnError`: the exception carries the status code
// name (`.code`, e.g. "INVALID_ARGUMENT") and Kiln's located message.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace kiln::python {

// Creates kiln.KilnError (a RuntimeError) in `m` and installs the translator for StatusError.
void RegisterKilnError(nanobind::module_& m);

// Thrown by the binding code; becomes KilnError at the Python boundary.
class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status s) : status_(std::move(s)), what_(status_.message()) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  absl::Status status_;
  std::string what_;
};

inline void ThrowIfError(const absl::Status& s) {
  if (!s.ok()) throw StatusError(s);
}
template <typename T>
T ValueOrThrow(absl::StatusOr<T> v) {
  if (!v.ok()) throw StatusError(v.status());
  return std::move(*v);
}

}  // namespace kiln::python
