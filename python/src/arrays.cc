#include "python/src/arrays.h"

#define PY_ARRAY_UNIQUE_SYMBOL kiln_python_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <nanobind/stl/string.h>
#include <numpy/arrayobject.h>  // the build tree's link: see python/meson.build

#include <cstring>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "python/src/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

// The element types NumPy gets from ml_dtypes, by its type name; their descriptors are filled
// in when ml_dtypes imports (null otherwise). ml_dtypes stores each in the bytes Kiln does
// (sub-byte integers in the low bits of a byte).
struct MlDtype {
  PrimitiveType type;
  const char* name;
  PyArray_Descr* descr = nullptr;
};
MlDtype ml_dtypes_table[] = {
    {PrimitiveType::BF16, "bfloat16"},
    {PrimitiveType::F8E4M3FN, "float8_e4m3fn"},
    {PrimitiveType::F8E5M2, "float8_e5m2"},
    {PrimitiveType::F8E4M3FNUZ, "float8_e4m3fnuz"},
    {PrimitiveType::F8E5M2FNUZ, "float8_e5m2fnuz"},
    {PrimitiveType::F8E4M3B11FNUZ, "float8_e4m3b11fnuz"},
    {PrimitiveType::F8E3M4, "float8_e3m4"},
    {PrimitiveType::F8E4M3, "float8_e4m3"},
    {PrimitiveType::F8E8M0FNU, "float8_e8m0fnu"},
    {PrimitiveType::F4E2M1FN, "float4_e2m1fn"},
    {PrimitiveType::S4, "int4"},
    {PrimitiveType::U4, "uint4"},
    {PrimitiveType::S2, "int2"},
    {PrimitiveType::U2, "uint2"},
};

void* ImportNumpy() {
  import_array();  // a macro that returns NULL on failure
  return nullptr;
}

// NumPy type number -> Kiln element type (bf16 is matched by descriptor, not number).
std::optional<PrimitiveType> FromTypeNum(int num) {
  switch (num) {
    case NPY_BOOL:
      return PrimitiveType::PRED;
    case NPY_INT8:
      return PrimitiveType::S8;
    case NPY_INT16:
      return PrimitiveType::S16;
    case NPY_INT32:
      return PrimitiveType::S32;
    case NPY_INT64:
      return PrimitiveType::S64;
    case NPY_UINT8:
      return PrimitiveType::U8;
    case NPY_UINT16:
      return PrimitiveType::U16;
    case NPY_UINT32:
      return PrimitiveType::U32;
    case NPY_UINT64:
      return PrimitiveType::U64;
    case NPY_FLOAT16:
      return PrimitiveType::F16;
    case NPY_FLOAT32:
      return PrimitiveType::F32;
    case NPY_FLOAT64:
      return PrimitiveType::F64;
    case NPY_COMPLEX64:
      return PrimitiveType::C64;
    case NPY_COMPLEX128:
      return PrimitiveType::C128;
    default:
      return std::nullopt;
  }
}

int ToTypeNum(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::PRED:
      return NPY_BOOL;
    case PrimitiveType::S8:
      return NPY_INT8;
    case PrimitiveType::S16:
      return NPY_INT16;
    case PrimitiveType::S32:
      return NPY_INT32;
    case PrimitiveType::S64:
      return NPY_INT64;
    case PrimitiveType::U8:
      return NPY_UINT8;
    case PrimitiveType::U16:
      return NPY_UINT16;
    case PrimitiveType::U32:
      return NPY_UINT32;
    case PrimitiveType::U64:
      return NPY_UINT64;
    case PrimitiveType::F16:
      return NPY_FLOAT16;
    case PrimitiveType::F32:
      return NPY_FLOAT32;
    case PrimitiveType::F64:
      return NPY_FLOAT64;
    case PrimitiveType::C64:
      return NPY_COMPLEX64;
    case PrimitiveType::C128:
      return NPY_COMPLEX128;
    default:
      return -1;  // bf16 (by descriptor), tuple, token
  }
}

std::optional<PrimitiveType> ElementTypeOf(PyArray_Descr* d) {
  for (const MlDtype& m : ml_dtypes_table)
    if (m.descr != nullptr && d->typeobj == m.descr->typeobj) return m.type;
  return FromTypeNum(d->type_num);
}

// A new reference to the descriptor for `t` (null for ml_dtypes' types without ml_dtypes).
PyArray_Descr* DescrFor(PrimitiveType t) {
  for (const MlDtype& m : ml_dtypes_table) {
    if (m.type == t) {
      Py_XINCREF(m.descr);
      return m.descr;
    }
  }
  int num = ToTypeNum(t);
  return num < 0 ? nullptr : PyArray_DescrFromType(num);
}

bool SameDims(PyArrayObject* a, const Shape& s) {
  return PyArray_NDIM(a) == s.rank() &&
         std::equal(s.dimensions().begin(), s.dimensions().end(), PyArray_DIMS(a));
}

std::string DescribeArray(PyArrayObject* a) {
  std::optional<PrimitiveType> t = ElementTypeOf(PyArray_DESCR(a));
  std::string type =
      t ? std::string(PrimitiveTypeName(*t))
        : nb::cast<std::string>(nb::str(nb::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(a)))));
  std::vector<int64_t> dims(PyArray_DIMS(a), PyArray_DIMS(a) + PyArray_NDIM(a));
  return fmt::format("{}[{}]", type, fmt::join(dims, ","));
}

}  // namespace

void InitArrays() {
  ImportNumpy();
  if (PyErr_Occurred()) throw nb::python_error();
  try {
    nb::object ml_dtypes = nb::module_::import_("ml_dtypes");
    for (MlDtype& m : ml_dtypes_table) {
      if (!nb::hasattr(ml_dtypes, m.name)) continue;  // an older ml_dtypes
      PyArray_Descr* d = nullptr;
      if (PyArray_DescrConverter(ml_dtypes.attr(m.name).ptr(), &d) == NPY_SUCCEED) {
        m.descr = d;  // kept for the life of the process
      } else {
        PyErr_Clear();
      }
    }
  } catch (const nb::python_error&) {
    // No ml_dtypes: bf16 results come back as float32.
  }
}

bool IsNdarray(nb::handle obj) { return PyArray_Check(obj.ptr()); }

std::string DescribePython(nb::handle obj) {
  if (PyArray_Check(obj.ptr())) return DescribeArray(reinterpret_cast<PyArrayObject*>(obj.ptr()));
  return nb::cast<std::string>(
      nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("__name__")));
}

absl::StatusOr<PrimitiveType> ElementTypeOfDtype(nb::handle dtype) {
  PyArray_Descr* d = nullptr;
  if (PyArray_DescrConverter(dtype.ptr(), &d) != NPY_SUCCEED) {
    PyErr_Clear();
    return absl::InvalidArgumentError("not a NumPy dtype");
  }
  std::optional<PrimitiveType> t = ElementTypeOf(d);
  std::string name = nb::cast<std::string>(nb::str(nb::handle(reinterpret_cast<PyObject*>(d))));
  Py_DECREF(d);
  if (!t) return absl::InvalidArgumentError(fmt::format("dtype {} has no Kiln element type", name));
  return *t;
}

const void* ExactArrayData(nb::handle obj, const Shape& expected) {
  if (!PyArray_Check(obj.ptr())) return nullptr;
  auto* a = reinterpret_cast<PyArrayObject*>(obj.ptr());
  std::optional<PrimitiveType> t = ElementTypeOf(PyArray_DESCR(a));
  if (!t || *t != expected.element_type() || !PyArray_ISCARRAY_RO(a) || !SameDims(a, expected)) {
    return nullptr;
  }
  return PyArray_DATA(a);
}

std::pair<nb::object, void*> NewArray(const Shape& shape) {
  PyArray_Descr* descr = DescrFor(shape.element_type());  // a new reference, stolen below
  if (descr == nullptr) return {nb::none(), nullptr};
  std::vector<npy_intp> dims(shape.dimensions().begin(), shape.dimensions().end());
  PyObject* out = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()),
                                       dims.data(), nullptr, nullptr, 0, nullptr);
  if (out == nullptr) throw nb::python_error();
  return {nb::steal(out), PyArray_DATA(reinterpret_cast<PyArrayObject*>(out))};
}

absl::StatusOr<nb::object> ContiguousArray(nb::handle obj, const Shape& expected,
                                           absl::FunctionRef<std::string()> what) {
  if (!expected.IsArray()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: parameter shape {} cannot be given from Python", what(), expected.ToString(false)));
  }
  nb::object array;  // a C-contiguous, aligned ndarray of the expected dtype
  if (PyArray_Check(obj.ptr())) {
    auto* a = reinterpret_cast<PyArrayObject*>(obj.ptr());
    std::optional<PrimitiveType> t = ElementTypeOf(PyArray_DESCR(a));
    if (!t || *t != expected.element_type() || !SameDims(a, expected)) {
      return absl::InvalidArgumentError(fmt::format("{}: expected {}, got an array of {}", what(),
                                                    expected.ToString(false), DescribeArray(a)));
    }
    array = nb::borrow(obj);
    if (!PyArray_ISCARRAY_RO(a)) {
      array = nb::steal(PyArray_NewCopy(a, NPY_CORDER));
      if (!array.is_valid()) throw nb::python_error();
    }
  } else {
    PyArray_Descr* descr = DescrFor(expected.element_type());
    if (descr == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {} arguments need ml_dtypes (pip install ml_dtypes)", what(),
                      PrimitiveTypeName(expected.element_type())));
    }
    // Steals descr.
    PyObject* converted = PyArray_FromAny(obj.ptr(), descr, 0, 0,
                                          NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, nullptr);
    if (converted == nullptr) {
      nb::python_error err;
      return absl::InvalidArgumentError(fmt::format("{}: cannot convert {} to {}: {}", what(),
                                                    DescribePython(obj), expected.ToString(false),
                                                    err.what()));
    }
    array = nb::steal(converted);
    auto* a = reinterpret_cast<PyArrayObject*>(converted);
    if (!SameDims(a, expected)) {
      return absl::InvalidArgumentError(fmt::format("{}: expected {}, got {} of shape {}", what(),
                                                    expected.ToString(false), DescribePython(obj),
                                                    DescribeArray(a)));
    }
  }
  return array;
}

const void* ArrayData(nb::handle array) {
  return PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.ptr()));
}

absl::StatusOr<Literal> LiteralFromPython(nb::handle obj, const Shape& expected,
                                          absl::FunctionRef<std::string()> what) {
  absl::StatusOr<nb::object> array = ContiguousArray(obj, expected, what);
  if (!array.ok()) return array.status();
  Literal literal = Literal::Uninitialized(Shape(expected.element_type(), expected.dimensions()));
  if (literal.size_bytes() > 0) {
    std::memcpy(literal.untyped_data(), ArrayData(*array), literal.size_bytes());
  }
  return literal;
}

nb::object ArrayFromLiteral(Literal literal) {
  const Shape& shape = literal.shape();
  std::vector<npy_intp> dims(shape.dimensions().begin(), shape.dimensions().end());
  PrimitiveType type = shape.element_type();
  PyArray_Descr* descr = DescrFor(type);
  if (descr == nullptr && (IsMiniFloat(type) || IsSubByteInt(type))) {
    // No ml_dtypes: minifloats widen to float32, sub-byte integers to int8/uint8.
    PrimitiveType wide = IsMiniFloat(type)   ? PrimitiveType::F32
                         : IsSignedInt(type) ? PrimitiveType::S8
                                             : PrimitiveType::U8;
    return ArrayFromLiteral(literal.Convert(wide));
  }
  if (descr == nullptr && type == PrimitiveType::BF16) {
    // No ml_dtypes: widen to float32 (bf16 is the high half of an f32).
    nb::object out =
        nb::steal(PyArray_SimpleNew(static_cast<int>(dims.size()), dims.data(), NPY_FLOAT32));
    if (!out.is_valid()) throw nb::python_error();
    auto* dst = static_cast<uint32_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(out.ptr())));
    const auto* src = reinterpret_cast<const uint16_t*>(literal.untyped_data());
    for (int64_t i = 0, n = shape.num_elements(); i < n; ++i) dst[i] = uint32_t{src[i]} << 16;
    return out;
  }
  if (descr == nullptr) {
    throw StatusError(absl::UnimplementedError(
        fmt::format("results of type {} cannot be returned to Python", shape.ToString(false))));
  }
  if (literal.size_bytes() == 0) {
    nb::object out = nb::steal(PyArray_Empty(static_cast<int>(dims.size()), dims.data(), descr, 0));
    if (!out.is_valid()) throw nb::python_error();
    return out;
  }
  auto* owned = new Literal(std::move(literal));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Literal*>(p); });
  PyObject* out =
      PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()), dims.data(),
                           nullptr, owned->untyped_data(), NPY_ARRAY_CARRAY, nullptr);
  if (out == nullptr) throw nb::python_error();
  // The array keeps the capsule (and so the literal) alive.
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(out), owner.release().ptr()) < 0) {
    Py_DECREF(out);
    throw nb::python_error();
  }
  return nb::steal(out);
}

}  // namespace kiln::python
