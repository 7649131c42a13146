// A sort of complex operands (jnp.sort_complex after eigvals, jnp.sort of a complex array) as
// a sort of their real and imaginary parts, each complex operand two float operands, with a
// comparator that reads the parts as parameters where the original took real() and imag()
// of a complex one; the sorted parts are put back together. A backend whose sort compares
// floats natively (cpu-llvm's generated comparator) then takes it: 64 eigenvalues sorted on
// the interpreter took 2 ms, more than the eigendecomposition. A comparator that uses a
// complex parameter other than through real() and imag() leaves its sort alone.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class SortComplexAsParts : public HloPass {
 public:
  std::string_view name() const override { return "sort-complex-as-parts"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
