// Collective ops run by the evaluator on several in-process devices, against values worked
// out by hand from XLA's definitions; replica groups in every mode; failures that must not hang.
#include <gtest/gtest.h>

#include <chrono>

#include "hlo/collectives/local_communicator.h"
#include "hlo/collectives/replica_groups.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/multi_device.h"
#include "hlo/evaluator/test_builder.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using testing_util::As;
using testing_util::Vals;
using P = PrimitiveType;

constexpr char kSum[] = R"(
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
)";

// Every element of `l`, tuple elements one after another.
void Flatten(const Literal& l, std::vector<double>& out) {
  if (!l.IsTuple()) {
    for (double v : testing_util::AsDoubles(l)) out.push_back(v);
    return;
  }
  for (const Literal& e : l.elements()) Flatten(e, out);
}

// Runs `body` (an entry taking f32[dims] %a) on `n` replicas; device d's argument is
// d*100 + iota, so every element says where it came from.
std::vector<std::vector<double>> RunOn(int n, const std::string& body, std::vector<int64_t> dims,
                                       DeviceGrid grid = {}, absl::Status* error = nullptr) {
  if (grid.num_devices() == 1) grid = {n, 1};
  auto module = ParseHloModule(std::string("HloModule m\n") + kSum + body);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<std::vector<Literal>> args(n);
  for (int d = 0; d < n; ++d) {
    std::vector<double> v(count);
    for (int64_t i = 0; i < count; ++i) v[i] = d * 100 + i;
    args[d].push_back(Vals(P::F32, dims, v));
  }
  auto r = EvaluateOnDevices(**module, grid, std::move(args));
  if (error) *error = r.status();
  if (!error) {
    EXPECT_TRUE(r.ok()) << r.status();
  }
  std::vector<std::vector<double>> out;
  if (r.ok())
    for (const Literal& l : *r) Flatten(l, out.emplace_back());
  return out;
}

TEST(Collectives, AllReduceSumsOverEveryReplica) {
  auto r = RunOn(4, R"(ENTRY %e (a: f32[3]) -> f32[3] {
  %a = f32[3] parameter(0)
  ROOT %r = f32[3] all-reduce(%a), replica_groups={}, to_apply=%sum
})",
                 {3});
  ASSERT_EQ(r.size(), 4u);
  for (const auto& v : r) EXPECT_EQ(v, (std::vector<double>{600, 604, 608}));
}

TEST(Collectives, AllReduceInGroupsAndWithAReducerOfItsOwn) {
  // {0,2} and {1,3}; the reducer x*2+y is no native reduction, so it runs on the evaluator
  // in group order: the group's first member's value first (device 2 in {2,0}).
  auto r = RunOn(4, R"(
%odd (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %two = f32[] constant(2)
  %x2 = f32[] multiply(%x, %two)
  ROOT %s = f32[] add(%x2, %y)
}
ENTRY %e (a: f32[2]) -> (f32[2], f32[2]) {
  %a = f32[2] parameter(0)
  %g = f32[2] all-reduce(%a), replica_groups={{0,2},{1,3}}, to_apply=%sum
  %o = f32[2] all-reduce(%a), replica_groups={{2,0},{1,3}}, to_apply=%odd
  ROOT %t = (f32[2], f32[2]) tuple(%g, %o)
})",
                 {2});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], (std::vector<double>{200, 202, 400, 403}));  // 2*200+0, 2*201+1
  EXPECT_EQ(r[2], r[0]);
  EXPECT_EQ(r[1], (std::vector<double>{400, 402, 500, 503}));  // 2*100+300, 2*101+301
  EXPECT_EQ(r[3], r[1]);
}

TEST(Collectives, AllGatherConcatenatesAlongItsDimension) {
  auto r = RunOn(2, R"(ENTRY %e (a: f32[2,2]) -> f32[2,4] {
  %a = f32[2,2] parameter(0)
  ROOT %g = f32[2,4] all-gather(%a), replica_groups={{0,1}}, dimensions={1}
})",
                 {2, 2});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<double>{0, 1, 100, 101, 2, 3, 102, 103}));
  EXPECT_EQ(r[1], r[0]);
}

TEST(Collectives, ReduceScatterKeepsEachMembersPart) {
  auto r = RunOn(2, R"(ENTRY %e (a: f32[4,1]) -> f32[2,1] {
  %a = f32[4,1] parameter(0)
  ROOT %rs = f32[2,1] reduce-scatter(%a), replica_groups={}, dimensions={0}, to_apply=%sum
})",
                 {4, 1});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<double>{100, 102}));
  EXPECT_EQ(r[1], (std::vector<double>{104, 106}));
}

TEST(Collectives, AllToAllSplitsAndConcatenates) {
  // Split along dimension 1 into 2 chunks: chunk i to member i, received chunks joined.
  auto r = RunOn(2, R"(ENTRY %e (a: f32[2,4]) -> f32[2,4] {
  %a = f32[2,4] parameter(0)
  ROOT %x = f32[2,4] all-to-all(%a), replica_groups={{0,1}}, dimensions={1}
})",
                 {2, 4});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<double>{0, 1, 100, 101, 4, 5, 104, 105}));
  EXPECT_EQ(r[1], (std::vector<double>{2, 3, 102, 103, 6, 7, 106, 107}));
}

TEST(Collectives, CollectivePermuteAndBroadcastAndIds) {
  auto r = RunOn(3, R"(ENTRY %e (a: f32[1]) -> (f32[1], f32[1], u32[]) {
  %a = f32[1] parameter(0)
  %p = f32[1] collective-permute(%a), source_target_pairs={{0,1},{1,2}}
  %b = f32[1] collective-broadcast(%a), replica_groups={{2,0,1}}
  %id = u32[] replica-id()
  ROOT %t = (f32[1], f32[1], u32[]) tuple(%p, %b, %id)
})",
                 {1});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (std::vector<double>{0, 200, 0}));  // nobody sends to 0: zeros
  EXPECT_EQ(r[1], (std::vector<double>{0, 200, 1}));
  EXPECT_EQ(r[2], (std::vector<double>{100, 200, 2}));
}

TEST(Collectives, AsyncStartDonePairs) {
  auto r = RunOn(2, R"(ENTRY %e (a: f32[2]) -> (f32[2], f32[4]) {
  %a = f32[2] parameter(0)
  %s = f32[2] all-reduce-start(%a), replica_groups={}, to_apply=%sum
  %d = f32[2] all-reduce-done(%s)
  %gs = (f32[2], f32[4]) all-gather-start(%a), replica_groups={}, dimensions={0}
  %gd = f32[4] all-gather-done(%gs)
  ROOT %t = (f32[2], f32[4]) tuple(%d, %gd)
})",
                 {2});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<double>{100, 102, 0, 1, 100, 101}));
}

TEST(Collectives, CrossPartitionWithChannelIdsAndGlobalIds) {
  // 2 replicas x 2 partitions: device = replica*2 + partition.
  auto r = RunOn(4, R"(ENTRY %e (a: f32[1]) -> (f32[1], f32[1], f32[1], u32[]) {
  %a = f32[1] parameter(0)
  %rep = f32[1] all-reduce(%a), replica_groups={}, to_apply=%sum
  %part = f32[1] all-reduce(%a), channel_id=1, replica_groups={{0},{1}}, to_apply=%sum
  %flat = f32[1] all-reduce(%a), channel_id=2, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, to_apply=%sum
  %pid = u32[] partition-id()
  ROOT %t = (f32[1], f32[1], f32[1], u32[]) tuple(%rep, %part, %flat, %pid)
})",
                 {1}, DeviceGrid{2, 2});
  ASSERT_EQ(r.size(), 4u);
  // cross-replica: {0,2} and {1,3}; replica 0 with all its partitions: {0,1}; flat: as listed.
  EXPECT_EQ(r[0], (std::vector<double>{200, 100, 300, 0}));
  EXPECT_EQ(r[1], (std::vector<double>{400, 100, 300, 1}));
  EXPECT_EQ(r[2], (std::vector<double>{200, 500, 300, 0}));
  EXPECT_EQ(r[3], (std::vector<double>{400, 500, 300, 1}));
}

TEST(Collectives, IotaReplicaGroups) {
  auto g = ParseReplicaGroups("[2,4]<=[4,2]T(1,0)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, (std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  auto plain = ParseReplicaGroups("[2,2]<=[4]");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_FALSE(ParseReplicaGroups("[3,2]<=[4]").ok());
  EXPECT_FALSE(ParseReplicaGroups("{{0,x}}").ok());
}

TEST(Collectives, GroupsNamingMissingDevicesAreLocatedErrors) {
  absl::Status error;
  RunOn(2, R"(ENTRY %e (a: f32[1]) -> f32[1] {
  %a = f32[1] parameter(0)
  ROOT %r.3 = f32[1] all-reduce(%a), replica_groups={{0,1,2,3}}, to_apply=%sum
})",
        {1}, {}, &error);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error.message().find("%r.3"), std::string::npos) << error;
  EXPECT_NE(error.message().find("name replica 2"), std::string::npos) << error;
}

TEST(Collectives, ADeviceThatFailsDoesNotHangTheOthers) {
  // Device 1 divides by a zero-sized... fails in a custom-call before the all-reduce; device 0
  // must fail at the all-reduce soon, not wait forever.
  auto module = ParseHloModule(std::string("HloModule m\n") + kSum + R"(
%fail (p: f32[1]) -> f32[1] {
  %p = f32[1] parameter(0)
  ROOT %c = f32[1] custom-call(%p), custom_call_target="no_such_target"
}
%pass (p: f32[1]) -> f32[1] {
  ROOT %p = f32[1] parameter(0)
}
ENTRY %e (a: f32[1]) -> f32[1] {
  %a = f32[1] parameter(0)
  %id = u32[] replica-id()
  %zero = u32[] constant(0)
  %first = pred[] compare(%id, %zero), direction=EQ
  %x = f32[1] conditional(%first, %a, %a), true_computation=%pass, false_computation=%fail
  ROOT %r = f32[1] all-reduce(%x), replica_groups={}, to_apply=%sum
})");
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<std::vector<Literal>> args(2);
  for (auto& a : args) a.push_back(Vals(P::F32, {1}, {1}));
  auto start = std::chrono::steady_clock::now();
  auto r = EvaluateOnDevices(**module, {2, 1}, std::move(args));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("device 1"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("no_such_target"), std::string::npos) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Collectives, ADeviceThatNeverComesTimesOut) {
  // Only replica 0 takes the branch with the all-reduce: it waits for replica 1 until the
  // deadline, then fails with DEADLINE_EXCEEDED naming the op's devices.
  auto module = ParseHloModule(std::string("HloModule m\n") + kSum + R"(
%reduce (p: f32[1]) -> f32[1] {
  %p = f32[1] parameter(0)
  ROOT %r = f32[1] all-reduce(%p), replica_groups={}, to_apply=%sum
}
%pass (p: f32[1]) -> f32[1] {
  ROOT %p = f32[1] parameter(0)
}
ENTRY %e (a: f32[1]) -> f32[1] {
  %a = f32[1] parameter(0)
  %id = u32[] replica-id()
  %zero = u32[] constant(0)
  %first = pred[] compare(%id, %zero), direction=EQ
  ROOT %x = f32[1] conditional(%first, %a, %a), true_computation=%reduce, false_computation=%pass
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::Status st = RunOnLocalDevices(
      {2, 1},
      [&](int d) -> absl::Status {
        HloEvaluator evaluator;
        std::vector<Literal> a;
        a.push_back(Vals(P::F32, {1}, {1}));
        return evaluator.Evaluate(**module, a).status();
      },
      /*timeout_s=*/0.5);
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_NE(st.message().find("all-reduce on devices {0,1}"), std::string::npos) << st;
}

}  // namespace
}  // namespace kiln
