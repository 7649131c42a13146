// Tests of the SPMD partitioner: sharding text and tilings, the partitioned program's shard
// shapes and collectives, and errors naming what is not supported.
#include "hlo/passes/spmd_partitioner.h"

#include <cmath>

#include "gtest/gtest.h"
#include "hlo/evaluator/multi_device.h"
#include "hlo/passes/spmd_sdy.h"
#include "hlo/passes/spmd_sharding.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::Near;
using testing::Parse;
using testing::RandomLiteral;
using testing::RunPassAndPrint;

// FileCheck reads `{{` as a regex: replica groups are looked up as plain text.
bool Has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// The tilings of an instruction's arrays by its sharding attribute (replicated without one).
std::vector<Tiling> TilingsOf(const HloInstruction& h, int64_t n) {
  const std::string* text = h.attrs().FindExtra("sharding");
  std::vector<Shape> shapes =
      h.shape().IsTuple() ? h.shape().tuple_shapes() : std::vector<Shape>{h.shape()};
  HloSharding s;
  if (text) s = ParseSharding(*text).value();
  std::vector<Tiling> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const HloSharding& e = s.kind == HloSharding::Kind::kTuple ? s.elements[i] : s;
    out.push_back(TilingOf(e, shapes[i].rank(), n).value());
  }
  return out;
}

std::vector<Literal> ArraysOf(const Literal& l) {
  if (!l.IsTuple()) return {l};
  return l.elements();
}

// Partitions `text` for `n` partitions and runs it on n devices with the tiles of random
// arguments: each device must return its tile (by the root's sharding) of what the module
// computes on one device.
::testing::AssertionResult PartitionPreservesValues(std::string_view text, int n) {
  std::unique_ptr<HloModule> before = Parse(text);
  std::unique_ptr<HloModule> after = Parse(text);
  SpmdPartitioner pass(n);
  absl::StatusOr<bool> changed = pass.Run(*after);
  if (!changed.ok()) return ::testing::AssertionFailure() << changed.status().message();
  if (absl::Status v = VerifyModule(*after); !v.ok())
    return ::testing::AssertionFailure() << v.message() << "\n" << after->ToString();
  std::mt19937 rng(5);
  std::vector<Literal> args;
  std::vector<std::vector<Literal>> per_device(n);
  for (const HloInstruction* p : before->entry()->parameters()) {
    args.push_back(RandomLiteral(p->shape(), rng));
    std::vector<Literal> arrays = ArraysOf(args.back());
    std::vector<Tiling> tilings = TilingsOf(*p, n);
    for (int d = 0; d < n; ++d) {
      std::vector<Literal> tiles;
      for (size_t i = 0; i < arrays.size(); ++i) tiles.push_back(TileOf(arrays[i], tilings[i], d));
      per_device[d].push_back(p->shape().IsTuple() ? Literal::MakeTuple(std::move(tiles))
                                                   : std::move(tiles[0]));
    }
  }
  HloEvaluator evaluator;
  absl::StatusOr<Literal> want = evaluator.Evaluate(*before, args);
  if (!want.ok()) return ::testing::AssertionFailure() << want.status().message();
  absl::StatusOr<std::vector<Literal>> got =
      EvaluateOnDevices(*after, DeviceGrid{1, n}, std::move(per_device));
  if (!got.ok())
    return ::testing::AssertionFailure() << got.status().message() << "\n" << after->ToString();
  std::vector<Literal> want_arrays = ArraysOf(*want);
  std::vector<Tiling> tilings = TilingsOf(*before->entry()->root(), n);
  for (int d = 0; d < n; ++d) {
    std::vector<Literal> got_arrays = ArraysOf((*got)[d]);
    for (size_t i = 0; i < want_arrays.size(); ++i) {
      ::testing::AssertionResult r = Near(got_arrays[i], TileOf(want_arrays[i], tilings[i], d));
      if (!r) return r << " (result " << i << " on device " << d << ")\n" << after->ToString();
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(SpmdShardingTest, ParsesTheForms) {
  absl::StatusOr<HloSharding> s =
      ParseSharding("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->kind, HloSharding::Kind::kTiled);
  EXPECT_TRUE(s->last_tile_dim_replicate);
  EXPECT_EQ(s->devices, (std::vector<int64_t>{0, 2, 1, 3}));
  absl::StatusOr<Tiling> t = TilingOf(*s, 2, 4);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tiles, (std::vector<int64_t>{1, 2}));
  // Devices 0 and 2 hold column tile 0, devices 1 and 3 column tile 1.
  EXPECT_EQ(t->index, (std::vector<std::vector<int64_t>>{{0, 0}, {0, 1}, {0, 0}, {0, 1}}));
  EXPECT_TRUE(t->Valid());
  EXPECT_EQ(ReplicaGroupsString(GroupsAlong(*t, {1})), "{{0,1},{2,3}}");

  s = ParseSharding("{devices=[2,1]1,0}");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->devices, (std::vector<int64_t>{1, 0}));
  t = TilingOf(*s, 2, 2);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->index, (std::vector<std::vector<int64_t>>{{1, 0}, {0, 0}}));
  EXPECT_EQ(ReplicaGroupsString(GroupsAlong(*t, {0})), "{{1,0}}");

  s = ParseSharding("{{replicated}, {maximal device=1}}");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->elements.size(), 2u);
  EXPECT_EQ(s->elements[1].kind, HloSharding::Kind::kMaximal);
  EXPECT_FALSE(TilingOf(s->elements[1], 1, 2).ok());
  EXPECT_FALSE(ParseSharding("{devices=[2,2]0,1,2}").ok());
  EXPECT_FALSE(ParseSharding("{bogus}").ok());
}

TEST(SpmdShardingTest, ReadsShardyText) {
  std::map<std::string, SdyMesh> meshes =
      ParseSdyMeshes(R"({xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}})").value();
  ASSERT_EQ(meshes.count("mesh"), 1u);
  EXPECT_EQ(meshes["mesh"].sizes, (std::vector<int64_t>{2, 2}));
  std::string attrs =
      R"({xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"y\"}, {}]>, <@mesh, )"
      R"([{}, {\"x\", \"y\"}]>, <@mesh, [{}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", )"
      R"(\"y\"}>"})";
  std::vector<HloSharding> s =
      ParseSdyShardings(SdyAttribute(attrs, "xla.sdy.in_shardings"), meshes).value();
  ASSERT_EQ(s.size(), 3u);
  // Split by "y" and copied along "x": device (x, y) holds tile y.
  Tiling t = TilingOf(s[0], 2, 4).value();
  EXPECT_EQ(t.ToString(), "[2,1] 0:(0,0) 1:(1,0) 2:(0,0) 3:(1,0)");
  t = TilingOf(s[1], 2, 4).value();
  EXPECT_EQ(t.ToString(), "[1,4] 0:(0,0) 1:(0,1) 2:(0,2) 3:(0,3)");
  EXPECT_EQ(s[2].kind, HloSharding::Kind::kReplicated);
  EXPECT_EQ(ParseSdyManualAxes(SdyAttribute(attrs, "xla.sdy.manual_axes")),
            (std::vector<std::string>{"x", "y"}));
}

TEST(SpmdPartitionerTest, ShardMapBodyRunsOnLocalShards) {
  // jax.shard_map as JAX exports it (the body's call inlined): operands resharded to the
  // body's in_shardings, its psum kept, its result taken as the shards of out_shardings.
  SpmdPartitioner pass(2);
  std::string text = RunPassAndPrint(pass, R"(
HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2]>}}
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0), sharding={devices=[2,1]<=[2]}
  w = f32[8,4] parameter(1), sharding={devices=[2,1]<=[2]}
  g = (f32[4,4], f32[4,4]) custom-call(x, w), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{}, {\"x\"}]>, <@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  a = f32[4,4] get-tuple-element(g), index=0
  b = f32[4,4] get-tuple-element(g), index=1
  d = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[4,4] all-reduce(d), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  ROOT l = f32[4,4] custom-call(r), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{}, {}]>]>"}, sharding={replicated}
}
)");
  EXPECT_TRUE(Has(text, "f32[2,8]{1,0} parameter(0)")) << text;
  EXPECT_TRUE(Has(text, "all-gather(")) << text;  // x from rows to columns
  EXPECT_TRUE(Has(text, "f32[4,4]{1,0} dot(")) << text;
  EXPECT_TRUE(Has(text, "all-reduce(f32[4,4]{1,0} %d), to_apply=%sum, channel_id=1")) << text;
  EXPECT_FALSE(Has(text, "custom-call")) << text;
}

TEST(SpmdPartitionerTest, DataParallelElementwiseAndReduce) {
  SpmdPartitioner pass;
  std::string out = RunPassAndPrint(pass, R"(
HloModule m, entry_computation_layout={(f32[8,4]{1,0})->f32[]}, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]0,1}
  t = f32[8,4] tanh(x)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(t, z), dimensions={0,1}, to_apply=add, sharding={replicated}
}
)");
  EXPECT_FILECHECK(out, R"(
    CHECK: HloModule m, entry_computation_layout={(f32[4,4]{1,0})->f32[]}, num_partitions=2
    CHECK: ENTRY
    CHECK: %x = f32[4,4]{1,0} parameter(0)
    CHECK: %t = f32[4,4]{1,0} tanh(
    CHECK: %r = f32[] reduce(
    CHECK: ROOT {{.*}} = f32[] all-reduce(f32[] %r), to_apply=%add, channel_id=1
  )");
  EXPECT_TRUE(Has(out, "replica_groups={{0,1}}, use_global_device_ids=true")) << out;
  EXPECT_EQ(out.find("sharding="), std::string::npos) << out;
}

TEST(SpmdPartitionerTest, ReplicatedResultOfShardedValueIsGathered) {
  SpmdPartitioner pass;
  std::string out = RunPassAndPrint(pass, R"(
HloModule m, num_partitions=4
ENTRY main {
  x = f32[8,6] parameter(0), sharding={devices=[2,2]<=[4]}
  ROOT n = f32[8,6] negate(x), sharding={replicated}
}
)");
  EXPECT_FILECHECK(out, R"(
    CHECK: %x = f32[4,3]{1,0} parameter(0)
    CHECK: %[[G:.*]] = f32[8,3]{1,0} all-gather(f32[4,3]{1,0} %x), dimensions={0}, channel_id=1
    CHECK: %[[H:.*]] = f32[8,6]{1,0} all-gather(f32[8,3]{1,0} %[[G]]), dimensions={1}, channel_id=2
    CHECK: ROOT %n = f32[8,6]{1,0} negate(f32[8,6]{1,0} %[[H]])
  )");
  // Devices 0 and 2 hold the row tiles of column tile 0; 0 and 1 the column tiles of row 0.
  EXPECT_TRUE(Has(out, "channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true"))
      << out;
  EXPECT_TRUE(Has(out, "channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true"))
      << out;
}

TEST(SpmdPartitionerTest, ReplicatedValueIsSlicedByPartitionId) {
  SpmdPartitioner pass;
  std::string out = RunPassAndPrint(pass, R"(
HloModule m, num_partitions=2
ENTRY main {
  x = f32[8,6] parameter(0), sharding={replicated}
  ROOT n = f32[8,6] negate(x), sharding={devices=[1,2]0,1}
}
)");
  EXPECT_FILECHECK(out, R"(
    CHECK: %x = f32[8,6]{1,0} parameter(0)
    CHECK: %[[TABLE:.*]] = s32[2]{0} constant({0, 3})
    CHECK: %[[ID:.*]] = u32[] partition-id()
    CHECK: dynamic-slice(s32[2]{0} %[[TABLE]], {{.*}}), dynamic_slice_sizes={1}
    CHECK: dynamic-slice(f32[8,6]{1,0} %x, {{.*}}), dynamic_slice_sizes={8,3}
    CHECK: ROOT %n = f32[8,3]{1,0} negate(
  )");
}

TEST(SpmdPartitionerTest, DotOnNonContractingDimsNeedsNoCollective) {
  SpmdPartitioner pass;
  std::string out = RunPassAndPrint(pass, R"(
HloModule m, num_partitions=4
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  w = f32[4,6] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,2]<=[4]}
}
)");
  EXPECT_FILECHECK(out, R"(
    CHECK: %x = f32[4,4]{1,0} parameter(0)
    CHECK: %w = f32[4,3]{1,0} parameter(1)
    CHECK: ROOT %d = f32[4,3]{1,0} dot(f32[4,4]{1,0} %x, f32[4,3]{1,0} %w)
  )");
  EXPECT_EQ(out.find("all-"), std::string::npos) << out;
}

TEST(SpmdPartitionerTest, DotOnContractingDimAllReducesPartialSums) {
  SpmdPartitioner pass;
  std::string out = RunPassAndPrint(pass, R"(
HloModule m, num_partitions=2
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[1,2]0,1}
  w = f32[4,6] parameter(1), sharding={devices=[2,1]0,1}
  ROOT d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}
)");
  EXPECT_FILECHECK(out, R"(
    CHECK: spmd_sum.f32
    CHECK: %d = f32[8,6]{1,0} dot(f32[8,2]{1,0} %x, f32[2,6]{1,0} %w)
    CHECK: ROOT {{.*}} all-reduce(f32[8,6]{1,0} %d), to_apply=%spmd_sum.f32, channel_id=1
  )");
  EXPECT_TRUE(Has(out, "replica_groups={{0,1}}")) << out;
}

TEST(SpmdPartitionerTest, TupleParametersAndRoots) {
  SpmdPartitioner pass;
  std::string out = RunPassAndPrint(pass, R"(
HloModule m, num_partitions=2
ENTRY main {
  p = (f32[4,2], f32[6]) parameter(0), sharding={{devices=[2,1]0,1}, {replicated}}
  a = f32[4,2] get-tuple-element(p), index=0
  b = f32[6] get-tuple-element(p), index=1
  e = f32[4,2] exponential(a)
  ROOT t = (f32[4,2], f32[6]) tuple(e, b), sharding={{devices=[2,1]0,1}, {devices=[2]0,1}}
}
)");
  EXPECT_FILECHECK(out, R"(
    CHECK: %p = (f32[2,2]{1,0}, f32[6]{0}) parameter(0)
    CHECK: dynamic-slice(f32[6]{0} %b
    CHECK: ROOT {{.*}} = (f32[2,2]{1,0}, f32[3]{0}) tuple(
  )");
}

TEST(SpmdPartitionerTest, ValuesSurviveReshardingBetweenDeviceOrders) {
  // Tiles in another device order, and a partially replicated result.
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  x = f32[8,6] parameter(0), sharding={devices=[2,2]3,1,0,2}
  y = f32[8,6] parameter(1), sharding={devices=[2,2]<=[4]}
  ROOT a = f32[8,6] add(x, y), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
}
)",
                                       4));
}

TEST(SpmdPartitionerTest, ValuesOfTransposeAndBatchDot) {
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  x = f32[4,6] parameter(0), sharding={devices=[2,1]0,1}
  ROOT t = f32[6,4] transpose(x), dimensions={1,0}, sharding={devices=[1,2]0,1}
}
)",
                                       2));
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  a = f32[4,2,3] parameter(0), sharding={devices=[2,1,1]0,1}
  b = f32[4,3,5] parameter(1), sharding={devices=[2,1,1]0,1}
  ROOT d = f32[4,2,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[2,1,1]0,1}
}
)",
                                       2));
}

TEST(SpmdPartitionerTest, ValuesOfDotsWhoseOperandsDisagree) {
  // Rows and the contracting dimension split; the replicated rhs is sliced to match.
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[2,2]<=[4]}
  w = f32[4,6] parameter(1), sharding={replicated}
  ROOT d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
}
)",
                                       4));
  // Four row tiles and two column tiles cannot both be kept on four devices.
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[4,8] parameter(1), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}
  ROOT d = f32[8,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}
)",
                                       4));
}

TEST(SpmdPartitionerTest, ValuesOfReduces) {
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[8,6] parameter(0), sharding={devices=[2,2]<=[4]}
  z = f32[] constant(0)
  s = f32[] reduce(x, z), dimensions={0,1}, to_apply=add
  h = f32[] constant(0.5)
  m = f32[6] reduce(x, h), dimensions={0}, to_apply=max
  ROOT t = (f32[], f32[6]) tuple(s, m), sharding={{replicated}, {devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}
}
)",
                                       4));
}

TEST(SpmdPartitionerTest, ValuesOfOpsRunWhole) {
  // reshape, iota and concatenate have no rule of their own: they run on replicated values.
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  r = f32[48] reshape(x)
  i = f32[48] iota(), iota_dimension=0
  a = f32[48] add(r, i)
  ROOT c = f32[96] concatenate(a, r), dimensions={0}, sharding={devices=[4]<=[4]}
}
)",
                                       4));
}

TEST(SpmdPartitionerTest, ValuesOfLoopOverShardedCarry) {
  // A fori_loop as JAX writes it: the loop runs whole on the gathered carry, then is sliced.
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
body {
  t = (s32[], f32[8,6], f32[6,6]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  c = f32[8,6] get-tuple-element(t), index=1
  w = f32[6,6] get-tuple-element(t), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  d = f32[8,6] dot(c, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f32[8,6] tanh(d)
  ROOT r = (s32[], f32[8,6], f32[6,6]) tuple(next, h, w)
}
cond {
  t = (s32[], f32[8,6], f32[6,6]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
ENTRY main {
  zero = s32[] constant(0)
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[6,6] parameter(1), sharding={replicated}
  init = (s32[], f32[8,6], f32[6,6]) tuple(zero, x, w)
  loop = (s32[], f32[8,6], f32[6,6]) while(init), condition=cond, body=body
  r = f32[8,6] get-tuple-element(loop), index=1
  ROOT out = f32[8,6] custom-call(r), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, sharding={devices=[4,1]<=[4]}
}
)",
                                       4));
}

TEST(SpmdPartitionerTest, ShardingsInsideCalledComputationsAreHints) {
  // JAX's psum inside shard_map leaves a Sharding custom-call in its reducer.
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  ROOT c = f32[] custom-call(s), custom_call_target="Sharding", sharding={replicated}
}
ENTRY main {
  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  zero = f32[] constant(0)
  ROOT r = f32[6] reduce(x, zero), dimensions={0}, to_apply=sum, sharding={replicated}
}
)",
                                       4));
}

TEST(SpmdPartitionerTest, ValuesOfTupleParameters) {
  EXPECT_TRUE(PartitionPreservesValues(R"(
HloModule m
ENTRY main {
  p = (f32[4,2], f32[6]) parameter(0), sharding={{devices=[2,1]0,1}, {replicated}}
  a = f32[4,2] get-tuple-element(p), index=0
  b = f32[6] get-tuple-element(p), index=1
  e = f32[4,2] exponential(a)
  ROOT t = (f32[4,2], f32[6]) tuple(e, b), sharding={{replicated}, {devices=[2]1,0}}
}
)",
                                       2));
}

TEST(SpmdPartitionerTest, UnsupportedShardingsNameTheInstruction) {
  auto error = [](std::string_view text) {
    std::unique_ptr<HloModule> m = Parse(text);
    SpmdPartitioner pass;
    absl::StatusOr<bool> r = pass.Run(*m);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  std::string e = error(R"(
HloModule m, num_partitions=2
ENTRY main {
  ROOT x = f32[8] parameter(0), sharding={maximal device=0}
}
)");
  EXPECT_NE(e.find("%x (parameter) with sharding={maximal device=0}"), std::string::npos) << e;
  e = error(R"(
HloModule m, num_partitions=2
ENTRY main {
  ROOT x = f32[7] parameter(0), sharding={devices=[2]0,1}
}
)");
  EXPECT_NE(e.find("%x"), std::string::npos) << e;
  EXPECT_NE(e.find("equal tiles"), std::string::npos) << e;
  e = error(R"(
HloModule m, num_partitions=2
ENTRY main {
  x = f32[8] parameter(0), sharding={devices=[2]0,1}
  ROOT c = f32[8] custom-call(x), custom_call_target="foo"
}
)");
  EXPECT_NE(e.find("%c (custom-call)"), std::string::npos) << e;
  // A loop over sharded values whose body has a side effect cannot run whole everywhere.
  e = error(R"(
HloModule m, num_partitions=2
body {
  t = (f32[8]) parameter(0)
  a = f32[8] get-tuple-element(t), index=0
  b = f32[8] custom-call(a), custom_call_target="foo", custom_call_has_side_effect=true
  ROOT r = (f32[8]) tuple(b)
}
cond {
  t = (f32[8]) parameter(0)
  ROOT f = pred[] constant(false)
}
ENTRY main {
  x = f32[8] parameter(0), sharding={devices=[2]0,1}
  init = (f32[8]) tuple(x)
  ROOT loop = (f32[8]) while(init), condition=cond, body=body
}
)");
  EXPECT_NE(e.find("%loop (while)"), std::string::npos) << e;
}

TEST(SpmdPartitionerTest, ModuleWithoutShardingsIsUnchanged) {
  SpmdPartitioner pass;
  bool changed = true;
  RunPassAndPrint(pass, "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n", &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
