#include "hlo/collectives/replica_groups.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln {
namespace {

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("replica_groups=", std::string(text), " cannot be read: ", std::string(why)));
}

// `{{0,1},{2,3}}` (also source_target_pairs): nested lists of integers.
absl::StatusOr<std::vector<std::vector<int64_t>>> ParseNested(std::string_view text) {
  std::vector<std::vector<int64_t>> out;
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return Bad(text, "not a {...} list");
  std::string_view inner(s.data() + 1, s.size() - 2);
  size_t i = 0;
  while (i < inner.size()) {
    if (inner[i] == ',') {
      ++i;
      continue;
    }
    if (inner[i] != '{') return Bad(text, "expected '{'");
    size_t close = inner.find('}', i);
    if (close == std::string_view::npos) return Bad(text, "unclosed '{'");
    std::vector<int64_t> group;
    std::string_view body = inner.substr(i + 1, close - i - 1);
    if (!body.empty()) {
      for (absl::string_view piece :
           absl::StrSplit(absl::string_view(body.data(), body.size()), ',')) {
        int64_t v;
        if (!absl::SimpleAtoi(piece, &v) || v < 0) return Bad(text, "a bad id");
        group.push_back(v);
      }
    }
    out.push_back(std::move(group));
    i = close + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseList(std::string_view text, std::string_view all) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  for (absl::string_view piece : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    int64_t v;
    if (!absl::SimpleAtoi(piece, &v) || v < 0) return Bad(all, "a bad number");
    out.push_back(v);
  }
  return out;
}

// `[G,S]<=[d0,d1,...]T(p0,p1,...)`: iota over the dims, transposed by the permutation,
// cut into G groups of S.
absl::StatusOr<std::vector<std::vector<int64_t>>> ParseIota(std::string_view text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  size_t arrow = s.find("<=");
  if (s.front() != '[' || arrow == std::string::npos || s[arrow - 1] != ']')
    return Bad(text, "not the [G,S]<=[dims] form");
  absl::StatusOr<std::vector<int64_t>> gs = ParseList(s.substr(1, arrow - 2), text);
  if (!gs.ok()) return gs.status();
  std::string rest = s.substr(arrow + 2);
  size_t dims_end = rest.find(']');
  if (rest.empty() || rest.front() != '[' || dims_end == std::string::npos)
    return Bad(text, "no [dims] after <=");
  absl::StatusOr<std::vector<int64_t>> dims = ParseList(rest.substr(1, dims_end - 1), text);
  if (!dims.ok()) return dims.status();
  std::vector<int64_t> perm(dims->size());
  std::iota(perm.begin(), perm.end(), 0);
  std::string tail = rest.substr(dims_end + 1);
  if (!tail.empty()) {
    if (tail.size() < 3 || tail.substr(0, 2) != "T(" || tail.back() != ')')
      return Bad(text, "expected T(permutation) after the dims");
    absl::StatusOr<std::vector<int64_t>> p = ParseList(tail.substr(2, tail.size() - 3), text);
    if (!p.ok()) return p.status();
    perm = *p;
  }
  if (gs->size() != 2) return Bad(text, "[G,S] needs two numbers");
  int64_t total = 1;
  for (int64_t d : *dims) total *= d;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k)
    if (sorted[k] != static_cast<int64_t>(k) || perm.size() != dims->size())
      return Bad(text, "T(...) is not a permutation of the dims");
  if ((*gs)[0] * (*gs)[1] != total) return Bad(text, "G*S differs from the number of ids");
  // Walk the transposed array in row-major order; its index k along axis j is the source's
  // index along perm[j].
  std::vector<int64_t> tdims(perm.size()), index(perm.size(), 0), stride(dims->size(), 1);
  for (size_t j = 0; j < perm.size(); ++j) tdims[j] = (*dims)[perm[j]];
  for (int j = static_cast<int>(dims->size()) - 2; j >= 0; --j)
    stride[j] = stride[j + 1] * (*dims)[j + 1];
  std::vector<std::vector<int64_t>> groups((*gs)[0]);
  for (int64_t n = 0; n < total; ++n) {
    int64_t id = 0;
    for (size_t j = 0; j < perm.size(); ++j) id += index[j] * stride[perm[j]];
    groups[n / (*gs)[1]].push_back(id);
    for (int j = static_cast<int>(tdims.size()) - 1; j >= 0; --j) {
      if (++index[j] < tdims[j]) break;
      index[j] = 0;
    }
  }
  return groups;
}

bool HasChannel(const HloInstruction& instr) { return instr.attrs().FindExtra("channel_id"); }

bool UsesGlobalIds(const HloInstruction& instr) {
  const std::string* v = instr.attrs().FindExtra("use_global_device_ids");
  return v != nullptr && *v == "true";
}

std::string GroupsText(const HloInstruction& instr) {
  const std::string* v = instr.attrs().FindExtra("replica_groups");
  return v ? *v : std::string("{}");
}

absl::Status OpError(const HloInstruction& instr, std::string why) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(HloOpcodeString(instr.opcode())), ": ",
                                                 why, " (instruction %", instr.name(), ")"));
}

std::string RunHint(DeviceGrid grid) {
  return absl::StrCat("the run has ", grid.replicas, " replica(s) x ", grid.partitions,
                      " partition(s); run it on as many devices as its groups name "
                      "(kiln run --replicas R --partitions P, under mpirun -np R*P across "
                      "processes)");
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int64_t>>> ParseReplicaGroups(std::string_view text) {
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (!t.empty() && t.front() == '[') return ParseIota(t);
  return ParseNested(t);
}

CollectiveMode CollectiveModeOf(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kReduceScatter:
      if (!HasChannel(instr)) return CollectiveMode::kCrossReplica;
      return UsesGlobalIds(instr) ? CollectiveMode::kFlattenedId
                                  : CollectiveMode::kCrossReplicaAndPartition;
    default:  // all-to-all, collective-permute, collective-broadcast
      return HasChannel(instr) ? CollectiveMode::kCrossPartition : CollectiveMode::kCrossReplica;
  }
}

absl::StatusOr<std::vector<int>> CollectiveGroup(const HloInstruction& instr, DeviceGrid grid,
                                                 int device) {
  const std::string text = GroupsText(instr);
  absl::StatusOr<std::vector<std::vector<int64_t>>> groups = ParseReplicaGroups(text);
  if (!groups.ok()) return OpError(instr, std::string(groups.status().message()));
  const int P = grid.partitions;
  const int r = device / P, p = device % P;
  const CollectiveMode mode = CollectiveModeOf(instr);
  // The id space the groups are written in, and the caller's id in it.
  int64_t space = grid.replicas, mine = r;
  const char* kind = "replica";
  if (mode == CollectiveMode::kCrossPartition) space = P, mine = p, kind = "partition";
  if (mode == CollectiveMode::kFlattenedId)
    space = grid.num_devices(), mine = device, kind = "device";
  std::vector<int64_t> group;
  if (groups->empty()) {
    group.resize(space);
    std::iota(group.begin(), group.end(), 0);
  } else {
    for (const std::vector<int64_t>& g : *groups) {
      for (int64_t id : g)
        if (id >= space)
          return OpError(instr, absl::StrCat("replica_groups=", text, " name ", kind, " ", id,
                                             ", but ", RunHint(grid)));
      if (std::find(g.begin(), g.end(), mine) != g.end()) group = g;
    }
    if (group.empty())
      return OpError(instr, absl::StrCat("replica_groups=", text, " leave out ", kind, " ", mine,
                                         ", which runs the op; ", RunHint(grid)));
  }
  std::vector<int> out;
  for (int64_t id : group) {
    switch (mode) {
      case CollectiveMode::kCrossReplica:
        out.push_back(static_cast<int>(id) * P + p);
        break;
      case CollectiveMode::kCrossPartition:
        out.push_back(r * P + static_cast<int>(id));
        break;
      case CollectiveMode::kCrossReplicaAndPartition:
        for (int q = 0; q < P; ++q) out.push_back(static_cast<int>(id) * P + q);
        break;
      case CollectiveMode::kFlattenedId:
        out.push_back(static_cast<int>(id));
        break;
    }
  }
  return out;
}

absl::StatusOr<PermutePlan> CollectivePermutePlan(const HloInstruction& instr, DeviceGrid grid,
                                                  int device) {
  const std::string* text = instr.attrs().FindExtra("source_target_pairs");
  absl::StatusOr<std::vector<std::vector<int64_t>>> pairs =
      ParseNested(text ? *text : std::string("{}"));
  if (!pairs.ok()) return OpError(instr, std::string(pairs.status().message()));
  const int P = grid.partitions;
  const int r = device / P, p = device % P;
  const bool cross_partition = CollectiveModeOf(instr) == CollectiveMode::kCrossPartition;
  const int64_t space = cross_partition ? P : grid.replicas;
  auto global = [&](int64_t id) {
    return cross_partition ? r * P + static_cast<int>(id) : static_cast<int>(id) * P + p;
  };
  PermutePlan plan;
  for (int64_t id = 0; id < space; ++id) plan.participants.push_back(global(id));
  for (const std::vector<int64_t>& pair : *pairs) {
    if (pair.size() != 2)
      return OpError(instr, "source_target_pairs must hold {source,target} pairs");
    for (int64_t id : pair)
      if (id >= space)
        return OpError(instr, absl::StrCat("source_target_pairs=", *text, " name ",
                                           cross_partition ? "partition " : "replica ", id,
                                           ", but ", RunHint(grid)));
    plan.pairs.emplace_back(global(pair[0]), global(pair[1]));
  }
  return plan;
}

}  // namespace kiln
