// Collective ops on the evaluator: what each op means (groups, dimensions, reducers) is
// worked out here; the bytes move through the run's Communicator (none: one device alone).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "hlo/collectives/communicator.h"
#include "hlo/collectives/reduction.h"
#include "hlo/collectives/replica_groups.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/evaluator_util.h"

namespace kiln::eval {
namespace {

// A run without a communicator: one device, which every group must be made of alone.
class SoloCommunicator : public Communicator {
 public:
  int device_id() const override { return 0; }
  DeviceGrid grid() const override { return {}; }
  absl::Status AllGather(std::span<const int>, const void* in, void* out, size_t bytes) override {
    if (bytes) std::memmove(out, in, bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> AllReduce(std::span<const int>, PrimitiveType type, ReductionKind,
                                 const void* in, void* out, size_t count) override {
    if (count) std::memmove(out, in, count * ByteSizeOf(type));
    return true;
  }
  absl::Status AllToAll(std::span<const int>, const void* in, void* out,
                        size_t chunk_bytes) override {
    if (chunk_bytes) std::memmove(out, in, chunk_bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Permute(std::span<const int>, std::span<const std::pair<int, int>> pairs,
                               const void* in, void* out, size_t bytes) override {
    for (const auto& [s, t] : pairs)
      if (s == 0 && t == 0) {
        if (bytes) std::memmove(out, in, bytes);
        return true;
      }
    return false;
  }
};

Communicator& Current() {
  static SoloCommunicator solo;
  Communicator* c = CurrentCommunicator();
  return c ? *c : solo;
}

absl::Status Located(const HloInstruction& instr, absl::Status s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(std::string(s.message()), InstrSuffix(instr)));
}

// Sizes of the row-major blocks around dimension d of `dims`: `outer` blocks before it, each
// of `inner_bytes` (dimension d and the rest).
struct Blocks {
  int64_t outer = 1;
  int64_t inner_bytes = 0;
};
Blocks BlocksAround(const Shape& s, int64_t d) {
  Blocks b;
  int64_t inner = ByteSizeOf(s.element_type());
  for (int64_t k = 0; k < s.rank(); ++k) (k < d ? b.outer : inner) *= s.dimensions(k);
  b.inner_bytes = inner;
  return b;
}

// `n` pieces of shape `piece`, one after another in `pieces`, joined along dimension d.
void Concatenate(const uint8_t* pieces, int n, const Shape& piece, int64_t d, uint8_t* out) {
  Blocks b = BlocksAround(piece, d);
  const int64_t piece_bytes = b.outer * b.inner_bytes;
  for (int64_t o = 0; o < b.outer; ++o)
    for (int i = 0; i < n; ++i)
      std::memcpy(out + (o * n + i) * b.inner_bytes, pieces + i * piece_bytes + o * b.inner_bytes,
                  b.inner_bytes);
}

// The inverse: `whole` cut into n equal pieces along dimension d, stored one after another.
void Split(const uint8_t* whole, int n, const Shape& whole_shape, int64_t d, uint8_t* pieces) {
  Blocks b = BlocksAround(whole_shape, d);
  const int64_t piece_inner = b.inner_bytes / n, piece_bytes = b.outer * piece_inner;
  for (int64_t o = 0; o < b.outer; ++o)
    for (int i = 0; i < n; ++i)
      std::memcpy(pieces + i * piece_bytes + o * piece_inner,
                  whole + o * b.inner_bytes + i * piece_inner, piece_inner);
}

Literal OneOrTuple(std::vector<Literal> values) {
  if (values.size() == 1) return std::move(values[0]);
  return Literal::MakeTuple(std::move(values));
}

absl::StatusOr<std::vector<int>> GroupOf(const HloInstruction& instr, Communicator& c) {
  return CollectiveGroup(instr, c.grid(), c.device_id());
}

// One array reduced over `group` with `instr`'s reducer.
absl::StatusOr<Literal> ReduceOver(const HloInstruction& instr, std::span<const int> group,
                                   const Literal& in, const CallFn& call, Communicator& c) {
  const PrimitiveType type = in.shape().element_type();
  const size_t count = in.element_count();
  Literal out = Literal::Uninitialized(in.shape());
  if (instr.called_computations().empty())
    return InvalidArgument(instr, "needs a reducer (to_apply=)");
  const HloComputation& reducer = *instr.called_computations()[0];
  std::optional<ReductionKind> kind = MatchReductionKind(reducer);
  if (kind) {
    absl::StatusOr<bool> done =
        c.AllReduce(group, type, *kind, in.untyped_data(), out.untyped_data(), count);
    if (!done.ok()) return Located(instr, done.status());
    if (*done) return out;
  }
  // Gather every member's array and fold it in group order with the reducer itself.
  const size_t bytes = in.size_bytes();
  std::vector<uint8_t> all(bytes * group.size());
  if (absl::Status s = c.AllGather(group, in.untyped_data(), all.data(), bytes); !s.ok())
    return Located(instr, s);
  if (bytes) std::memcpy(out.untyped_data(), all.data(), bytes);
  for (size_t m = 1; m < group.size(); ++m) {
    const uint8_t* next = all.data() + m * bytes;
    if (kind && ReduceInto(type, *kind, out.untyped_data(), next, count).ok()) continue;
    const int64_t es = ByteSizeOf(type);
    for (size_t i = 0; i < count; ++i) {
      Literal a(Shape::Scalar(type)), b(Shape::Scalar(type));
      std::memcpy(a.untyped_data(), out.untyped_data() + i * es, es);
      std::memcpy(b.untyped_data(), next + i * es, es);
      const Literal* args[] = {&a, &b};
      absl::StatusOr<Literal> r = call(reducer, args);
      if (!r.ok()) return r.status();
      std::memcpy(out.untyped_data() + i * es, r->untyped_data(), es);
    }
  }
  return out;
}

absl::StatusOr<Literal> AllReduce(const HloInstruction& instr, Operands ops, const CallFn& call) {
  Communicator& c = Current();
  absl::StatusOr<std::vector<int>> group = GroupOf(instr, c);
  if (!group.ok()) return group.status();
  std::vector<Literal> outs;
  for (const Literal* in : ops) {
    if (in->IsTuple()) return InvalidArgument(instr, "operands must be arrays");
    absl::StatusOr<Literal> r = ReduceOver(instr, *group, *in, call, c);
    if (!r.ok()) return r.status();
    outs.push_back(*std::move(r));
  }
  return OneOrTuple(std::move(outs));
}

absl::StatusOr<int64_t> TheDimension(const HloInstruction& instr, const Literal& in) {
  if (instr.dimensions().size() != 1 || instr.dimensions()[0] < 0 ||
      instr.dimensions()[0] >= in.shape().rank())
    return InvalidArgument(instr, "needs one dimension={d} within the operand's rank");
  return instr.dimensions()[0];
}

// The dimension `in` is cut along into n equal parts (reduce-scatter, all-to-all).
absl::StatusOr<int64_t> SplitDimension(const HloInstruction& instr, const Literal& in, int n) {
  absl::StatusOr<int64_t> d = TheDimension(instr, in);
  if (!d.ok()) return d.status();
  if (in.shape().dimensions(*d) % n != 0)
    return InvalidArgument(instr, absl::StrCat("dimension ", *d, " of ", in.shape().ToString(false),
                                               " does not split into ", n, " parts"));
  return d;
}

absl::StatusOr<Literal> AllGather(const HloInstruction& instr, Operands ops) {
  Communicator& c = Current();
  absl::StatusOr<std::vector<int>> group = GroupOf(instr, c);
  if (!group.ok()) return group.status();
  const int n = static_cast<int>(group->size());
  std::vector<Literal> outs;
  for (const Literal* in : ops) {
    absl::StatusOr<int64_t> d = TheDimension(instr, *in);
    if (!d.ok()) return d.status();
    std::vector<int64_t> dims(in->shape().dimensions().begin(), in->shape().dimensions().end());
    dims[*d] *= n;
    Literal out = Literal::Uninitialized(Shape(in->shape().element_type(), dims));
    std::vector<uint8_t> all(in->size_bytes() * n);
    if (absl::Status s = c.AllGather(*group, in->untyped_data(), all.data(), in->size_bytes());
        !s.ok())
      return Located(instr, s);
    Concatenate(all.data(), n, in->shape(), *d, out.untyped_data());
    outs.push_back(std::move(out));
  }
  return OneOrTuple(std::move(outs));
}

absl::StatusOr<Literal> ReduceScatter(const HloInstruction& instr, Operands ops,
                                      const CallFn& call) {
  Communicator& c = Current();
  absl::StatusOr<std::vector<int>> group = GroupOf(instr, c);
  if (!group.ok()) return group.status();
  const int n = static_cast<int>(group->size());
  const size_t me = std::find(group->begin(), group->end(), c.device_id()) - group->begin();
  std::vector<Literal> outs;
  for (const Literal* in : ops) {
    absl::StatusOr<int64_t> d = SplitDimension(instr, *in, n);
    if (!d.ok()) return d.status();
    absl::StatusOr<Literal> reduced = ReduceOver(instr, *group, *in, call, c);
    if (!reduced.ok()) return reduced.status();
    std::vector<int64_t> dims(in->shape().dimensions().begin(), in->shape().dimensions().end());
    dims[*d] /= n;
    Literal out = Literal::Uninitialized(Shape(in->shape().element_type(), dims));
    std::vector<uint8_t> pieces(in->size_bytes());
    Split(reduced->untyped_data(), n, in->shape(), *d, pieces.data());
    if (out.size_bytes())
      std::memcpy(out.untyped_data(), pieces.data() + me * out.size_bytes(), out.size_bytes());
    outs.push_back(std::move(out));
  }
  return OneOrTuple(std::move(outs));
}

absl::StatusOr<Literal> AllToAll(const HloInstruction& instr, Operands ops) {
  Communicator& c = Current();
  absl::StatusOr<std::vector<int>> group = GroupOf(instr, c);
  if (!group.ok()) return group.status();
  const int n = static_cast<int>(group->size());
  if (instr.dimensions().empty()) {
    // The tuple form: operand i goes to member i; result j came from member j.
    if (static_cast<int>(ops.size()) != n)
      return InvalidArgument(instr, absl::StrCat("the tuple form needs one operand per member (", n,
                                                 "), got ", ops.size()));
    const size_t bytes = ops[0]->size_bytes();
    for (const Literal* in : ops)
      if (!in->shape().Compatible(ops[0]->shape()))
        return InvalidArgument(instr, "the tuple form needs operands of one shape");
    std::vector<uint8_t> packed(bytes * n), got(bytes * n);
    for (int i = 0; i < n; ++i)
      if (bytes) std::memcpy(packed.data() + i * bytes, ops[i]->untyped_data(), bytes);
    if (absl::Status s = c.AllToAll(*group, packed.data(), got.data(), bytes); !s.ok())
      return Located(instr, s);
    std::vector<Literal> outs;
    for (int j = 0; j < n; ++j) {
      Literal out = Literal::Uninitialized(ops[0]->shape());
      if (bytes) std::memcpy(out.untyped_data(), got.data() + j * bytes, bytes);
      outs.push_back(std::move(out));
    }
    return Literal::MakeTuple(std::move(outs));
  }
  std::vector<Literal> outs;
  for (const Literal* in : ops) {
    absl::StatusOr<int64_t> d = SplitDimension(instr, *in, n);
    if (!d.ok()) return d.status();
    std::vector<uint8_t> packed(in->size_bytes()), got(in->size_bytes());
    Split(in->untyped_data(), n, in->shape(), *d, packed.data());
    if (absl::Status s = c.AllToAll(*group, packed.data(), got.data(), in->size_bytes() / n);
        !s.ok())
      return Located(instr, s);
    std::vector<int64_t> dims(in->shape().dimensions().begin(), in->shape().dimensions().end());
    dims[*d] /= n;
    Literal out = Literal::Uninitialized(in->shape());
    Concatenate(got.data(), n, Shape(in->shape().element_type(), dims), *d, out.untyped_data());
    outs.push_back(std::move(out));
  }
  return OneOrTuple(std::move(outs));
}

absl::StatusOr<Literal> CollectivePermute(const HloInstruction& instr, Operands ops) {
  Communicator& c = Current();
  if (ops.size() != 1 || ops[0]->IsTuple())
    return Unimplemented(instr, "collective-permute of more than one array (in place)");
  absl::StatusOr<PermutePlan> plan = CollectivePermutePlan(instr, c.grid(), c.device_id());
  if (!plan.ok()) return plan.status();
  Literal out(ops[0]->shape());  // zeros where no source sends, as XLA defines it
  absl::StatusOr<bool> got = c.Permute(plan->participants, plan->pairs, ops[0]->untyped_data(),
                                       out.untyped_data(), ops[0]->size_bytes());
  if (!got.ok()) return Located(instr, got.status());
  if (!*got) return Literal(ops[0]->shape());
  return out;
}

absl::StatusOr<Literal> CollectiveBroadcast(const HloInstruction& instr, Operands ops) {
  Communicator& c = Current();
  absl::StatusOr<std::vector<int>> group = GroupOf(instr, c);
  if (!group.ok()) return group.status();
  std::vector<Literal> outs;
  for (const Literal* in : ops) {
    // Every member gets the first member's array.
    std::vector<uint8_t> all(in->size_bytes() * group->size());
    if (absl::Status s = c.AllGather(*group, in->untyped_data(), all.data(), in->size_bytes());
        !s.ok())
      return Located(instr, s);
    Literal out = Literal::Uninitialized(in->shape());
    if (in->size_bytes()) std::memcpy(out.untyped_data(), all.data(), in->size_bytes());
    outs.push_back(std::move(out));
  }
  return OneOrTuple(std::move(outs));
}

// The start of an async pair carries (operands, result) so the done can return the result.
absl::StatusOr<Literal> StartTuple(const HloInstruction& instr, Operands ops,
                                   absl::StatusOr<Literal> result) {
  if (!result.ok()) return result;
  const Shape& shape = instr.shape();
  if (!shape.IsTuple() || shape.tuple_shapes().size() < 2)
    return InvalidArgument(instr, "expects a tuple (operands, result, ...) shape");
  std::vector<Literal> elems;
  std::vector<Literal> inputs;
  for (const Literal* in : ops) inputs.push_back(*in);
  elems.push_back(OneOrTuple(std::move(inputs)));
  elems.push_back(*std::move(result));
  for (size_t i = 2; i < shape.tuple_shapes().size(); ++i)
    elems.push_back(Literal(shape.tuple_shapes()[i]));  // contexts: unused
  return Literal::MakeTuple(std::move(elems));
}

}  // namespace

bool IsEvaluatorCollective(HloOpcode op) {
  switch (op) {
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kCollectiveBroadcast:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<Literal> EvalCollective(const HloInstruction& instr, Operands ops,
                                       const CallFn& call) {
  switch (instr.opcode()) {
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId: {
      Communicator& c = Current();
      const int P = c.grid().partitions;
      const uint32_t id =
          instr.opcode() == HloOpcode::kReplicaId ? c.device_id() / P : c.device_id() % P;
      Literal out(Shape::Scalar(PrimitiveType::U32));
      out.data<uint32_t>()[0] = id;
      return out;
    }
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
      return AllReduce(instr, ops, call);
    case HloOpcode::kAllReduceDone:
      return *ops[0];
    case HloOpcode::kAllGather:
      return AllGather(instr, ops);
    case HloOpcode::kAllGatherStart:
      return StartTuple(instr, ops, AllGather(instr, ops));
    case HloOpcode::kCollectivePermuteStart:
      return StartTuple(instr, ops, CollectivePermute(instr, ops));
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermuteDone:
      if (!ops[0]->IsTuple() || ops[0]->elements().size() < 2)
        return InvalidArgument(instr, "needs the tuple of its start");
      return ops[0]->elements()[1];
    case HloOpcode::kReduceScatter:
      return ReduceScatter(instr, ops, call);
    case HloOpcode::kAllToAll:
      return AllToAll(instr, ops);
    case HloOpcode::kCollectivePermute:
      return CollectivePermute(instr, ops);
    case HloOpcode::kCollectiveBroadcast:
      return CollectiveBroadcast(instr, ops);
    default:
      return Unimplemented(instr, "is a collective the evaluator does not run");
  }
}

}  // namespace kiln::eval
