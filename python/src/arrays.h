// NumPy arrays to and from Kiln literals, through NumPy's C API (the only file that uses it).
// bf16 is ml_dtypes.bfloat16 when ml_dtypes is installed (as JAX does); without it bf16
// results come back as float32 and bf16 arguments cannot be given.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "hlo/literal.h"

namespace kiln::python {

// Imports NumPy's C API and looks for ml_dtypes; call once at module import.
void InitArrays();

// True for a NumPy ndarray (or subclass).
bool IsNdarray(nanobind::handle obj);

// The argument for a parameter of array shape `expected`. An ndarray must have exactly that
// dtype and shape; other objects (Python scalars, lists, objects with __array__) are
// converted to the expected dtype first, as JAX treats weakly typed values. Errors say
// which argument (`what`) and what was expected.
// `what` names the argument in errors ("argument 2"); it is called only on an error.
absl::StatusOr<Literal> LiteralFromPython(nanobind::handle obj, const Shape& expected,
                                          absl::FunctionRef<std::string()> what);

// The same checks and conversions, without the copy into a literal: a C-contiguous, aligned
// ndarray of the expected element type and dims (`obj` itself when it already is one).
absl::StatusOr<nanobind::object> ContiguousArray(nanobind::handle obj, const Shape& expected,
                                                 absl::FunctionRef<std::string()> what);
// Where the bytes of an ndarray ContiguousArray returned are.
const void* ArrayData(nanobind::handle array);

// Where the bytes of `obj` are when it is a C-contiguous, aligned ndarray of exactly the
// expected element type and dims (so they can be lent without a copy); null otherwise.
const void* ExactArrayData(nanobind::handle obj, const Shape& expected);

// A new, uninitialized NumPy array for an array of `shape` and where its bytes are; the
// pointer is null when the type has no NumPy dtype here (bf16 without ml_dtypes).
std::pair<nanobind::object, void*> NewArray(const Shape& shape);

// A NumPy array viewing the literal's bytes without a copy (it owns the literal).
nanobind::object ArrayFromLiteral(Literal literal);

// "f32[2,3]" for an ndarray, for messages; "int" etc. for other objects.
std::string DescribePython(nanobind::handle obj);

// The Kiln element type of a NumPy dtype-like object, or InvalidArgument.
absl::StatusOr<PrimitiveType> ElementTypeOfDtype(nanobind::handle dtype);

}  // namespace kiln::python
