// HLO-level partitioning: assignment by capability and priority, contraction without cycles,
// the small-cluster rule, clear errors, and partitioned runs equal to the HLO evaluator on the
// whole module (with the test-elementwise plugin, cpu-llvm and the interpreter).
#include "core/hlo_partitioner.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/partitioned_executable.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

// Elementwise chains around a dot and a reduce.
constexpr const char* kMixed = R"(HloModule mixed

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4,3], w: f32[3,5], y: f32[4,5]) -> (f32[4,5], f32[4]) {
  %x = f32[4,3]{1,0} parameter(0)
  %w = f32[3,5]{1,0} parameter(1)
  %y = f32[4,5]{1,0} parameter(2)
  %x2 = f32[4,3]{1,0} multiply(f32[4,3]{1,0} %x, f32[4,3]{1,0} %x)
  %x3 = f32[4,3]{1,0} add(f32[4,3]{1,0} %x2, f32[4,3]{1,0} %x)
  %x4 = f32[4,3]{1,0} tanh(f32[4,3]{1,0} %x3)
  %x5 = f32[4,3]{1,0} subtract(f32[4,3]{1,0} %x4, f32[4,3]{1,0} %x)
  %dot = f32[4,5]{1,0} dot(f32[4,3]{1,0} %x5, f32[3,5]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %e1 = f32[4,5]{1,0} multiply(f32[4,5]{1,0} %dot, f32[4,5]{1,0} %y)
  %e2 = f32[4,5]{1,0} exponential(f32[4,5]{1,0} %e1)
  %e3 = f32[4,5]{1,0} add(f32[4,5]{1,0} %e2, f32[4,5]{1,0} %dot)
  %e4 = f32[4,5]{1,0} negate(f32[4,5]{1,0} %e3)
  %zero = f32[] constant(0)
  %r = f32[4]{0} reduce(f32[4,5]{1,0} %e4, f32[] %zero), dimensions={1}, to_apply=%add_f32
  ROOT %out = (f32[4,5]{1,0}, f32[4]{0}) tuple(f32[4,5]{1,0} %e4, f32[4]{0} %r)
}
)";

// An f16 reduce-precision (which cpu-llvm declines: it runs it on its evaluator; f32 ones it
// emits) between elementwise work.
constexpr const char* kRoundingBetween = R"(HloModule rounding_between

ENTRY %main (x: f32[16], y: f32[16]) -> f32[16] {
  %x = f32[16]{0} parameter(0)
  %y = f32[16]{0} parameter(1)
  %a = f32[16]{0} multiply(f32[16]{0} %x, f32[16]{0} %y)
  %b = f32[16]{0} add(f32[16]{0} %a, f32[16]{0} %x)
  %c = f32[16]{0} tanh(f32[16]{0} %b)
  %d = f32[16]{0} subtract(f32[16]{0} %c, f32[16]{0} %y)
  %dh = f16[16]{0} convert(f32[16]{0} %d)
  %s = f16[16]{0} reduce-precision(f16[16]{0} %dh), exponent_bits=5, mantissa_bits=4
  %sf = f32[16]{0} convert(f16[16]{0} %s)
  %e = f32[16]{0} multiply(f32[16]{0} %sf, f32[16]{0} %sf)
  %f = f32[16]{0} add(f32[16]{0} %e, f32[16]{0} %x)
  %g = f32[16]{0} exponential(f32[16]{0} %f)
  ROOT %h = f32[16]{0} negate(f32[16]{0} %g)
}
)";

std::unique_ptr<HloModule> Parse(const char* text) {
  absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// A capability table without plugins: `plugin` runs the listed opcodes (empty: all).
PluginCapability Cap(const HloModule& m, const std::string& plugin,
                     const std::set<HloOpcode>& ops) {
  PluginCapability c;
  c.plugin = plugin;
  for (const HloInstruction* i : m.entry()->instructions()) {
    if (ops.empty() || ops.count(i->opcode())) {
      c.supported.insert(i->name());
    } else {
      c.reasons[i->name()] = "is not in the test's list";
    }
  }
  return c;
}

const std::set<HloOpcode> kElementwise = {
    HloOpcode::kParameter, HloOpcode::kConstant, HloOpcode::kTuple,
    HloOpcode::kMultiply,  HloOpcode::kAdd,      HloOpcode::kSubtract,
    HloOpcode::kTanh,      HloOpcode::kExp,      HloOpcode::kNegate};

std::vector<std::string> Names(const HloCluster& c) {
  std::vector<std::string> out;
  for (const HloInstruction* i : c.instructions) out.push_back(i->name());
  return out;
}

TEST(HloPartitioner, ElementwiseChainsAndTheRestGoToTheirBestPlugins) {
  std::unique_ptr<HloModule> m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  std::vector<PluginCapability> caps = {Cap(*m, "ew", kElementwise), Cap(*m, "cpu", {})};
  absl::StatusOr<std::vector<HloCluster>> parts = PartitionModule(*m, caps);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 4u);
  EXPECT_EQ((*parts)[0].plugin, "ew");
  EXPECT_EQ(Names((*parts)[0]), (std::vector<std::string>{"x2", "x3", "x4", "x5"}));
  EXPECT_EQ((*parts)[1].plugin, "cpu");
  EXPECT_EQ(Names((*parts)[1]), std::vector<std::string>{"dot"});
  EXPECT_EQ((*parts)[2].plugin, "ew");
  EXPECT_EQ(Names((*parts)[2]), (std::vector<std::string>{"e1", "e2", "e3", "e4"}));
  // The root tuple alone would be a one-instruction ew cluster: it joins the reduce.
  EXPECT_EQ((*parts)[3].plugin, "cpu");
  EXPECT_EQ(Names((*parts)[3]), (std::vector<std::string>{"r", "out"}));
  // Boundaries: the dot cluster reads x5 and the parameter w; e4 feeds the last cluster.
  ASSERT_EQ((*parts)[1].inputs.size(), 2u);
  EXPECT_EQ((*parts)[1].inputs[0]->name(), "x5");
  EXPECT_EQ((*parts)[1].inputs[1]->name(), "w");
  ASSERT_EQ((*parts)[2].outputs.size(), 1u);
  EXPECT_EQ((*parts)[2].outputs[0]->name(), "e4");
  // The constant is copied into the cluster that reads it, with the reducer computation.
  EXPECT_NE((*parts)[3].module_text.find("%zero = f32[] constant(0)"), std::string::npos);
  EXPECT_NE((*parts)[3].module_text.find("%add_f32"), std::string::npos);
}

TEST(HloPartitioner, SmallClustersStayWhereTheyAreWithoutTheRule) {
  std::unique_ptr<HloModule> m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  std::vector<PluginCapability> caps = {Cap(*m, "ew", kElementwise), Cap(*m, "cpu", {})};
  PartitionOptions no_rule;
  no_rule.min_cluster_size = 1;
  absl::StatusOr<std::vector<HloCluster>> parts = PartitionModule(*m, caps, no_rule);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 5u);
  EXPECT_EQ(Names(parts->back()), std::vector<std::string>{"out"});
  EXPECT_EQ(parts->back().plugin, "ew");
  // With a large minimum every elementwise cluster joins its cpu neighbours: one cluster.
  PartitionOptions big;
  big.min_cluster_size = 100;
  parts = PartitionModule(*m, caps, big);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ(parts->front().plugin, "cpu");
}

TEST(HloPartitioner, NoClusterDependsOnALaterOne) {
  std::unique_ptr<HloModule> m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  std::vector<PluginCapability> caps = {Cap(*m, "ew", kElementwise), Cap(*m, "cpu", {})};
  PartitionOptions no_rule;
  no_rule.min_cluster_size = 1;
  absl::StatusOr<std::vector<HloCluster>> parts = PartitionModule(*m, caps, no_rule);
  ASSERT_TRUE(parts.ok()) << parts.status();
  std::map<const HloInstruction*, int> where;
  for (const HloCluster& c : *parts) {
    for (const HloInstruction* i : c.instructions) where[i] = c.id;
  }
  for (const HloCluster& c : *parts) {
    for (const HloInstruction* in : c.inputs) {
      if (in->opcode() != HloOpcode::kParameter) {
        EXPECT_LT(where.at(in), c.id) << in->name();
      }
    }
  }
}

TEST(HloPartitioner, AnInstructionNoPluginRunsIsNamed) {
  std::unique_ptr<HloModule> m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  std::set<HloOpcode> no_dot = kElementwise;
  no_dot.insert(HloOpcode::kReduce);
  std::vector<PluginCapability> caps = {Cap(*m, "ew", kElementwise), Cap(*m, "other", no_dot)};
  absl::StatusOr<std::vector<HloCluster>> parts = PartitionModule(*m, caps);
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(parts.status().message(),
            "no available plugin can run instruction 'dot' (dot); ew: 'dot' is not in the test's "
            "list; other: 'dot' is not in the test's list");
}

// --- with real plugins -------------------------------------------------------------------

PluginRegistry Registry(bool with_test_plugin) {
  std::vector<std::filesystem::path> dirs = {KILN_BUILD_PLUGIN_DIR};
  if (with_test_plugin) dirs.insert(dirs.begin(), KILN_TEST_ELEMENTWISE_PLUGIN_DIR);
  return PluginRegistry::Discover(DeviceConfig{}, dirs);
}

std::vector<Literal> Inputs(const HloModule& m) {
  std::vector<Literal> args;
  for (int i = 0; i < m.entry()->num_parameters(); ++i) {
    const Shape& s = m.entry()->parameter(i)->shape();
    std::vector<double> v(s.num_elements());
    for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.7 * k + i) * 0.9;
    args.push_back(Literal::FromDoubles(s, v));
  }
  return args;
}

// The partitioned run against the evaluator on the whole, unpartitioned module.
void ExpectSameAsEvaluator(const HloModule& m, const std::vector<HloCluster>& clusters) {
  std::vector<Literal> args = Inputs(m);
  absl::StatusOr<std::unique_ptr<PartitionedExecutable>> exe =
      PartitionedExecutable::Compile(m, clusters);
  ASSERT_TRUE(exe.ok()) << exe.status();
  absl::StatusOr<std::vector<Literal>> got = (*exe)->Execute(args);
  ASSERT_TRUE(got.ok()) << got.status();
  HloEvaluator evaluator;
  absl::StatusOr<Literal> want = evaluator.Evaluate(m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<Literal> leaves;
  if (want->IsTuple()) {
    leaves = std::move(*want).DecomposeTuple();
  } else {
    leaves.push_back(std::move(*want));
  }
  ASSERT_EQ(got->size(), leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    ASSERT_EQ((*got)[i].shape().dimensions(), leaves[i].shape().dimensions());
    for (int64_t k = 0; k < leaves[i].element_count(); ++k) {
      EXPECT_NEAR((*got)[i].GetAsDouble(k), leaves[i].GetAsDouble(k), 1e-5) << "output " << i;
    }
  }
}

const char* NextAfterTestPlugin() { return KILN_HAVE_CPU_LLVM ? "cpu-llvm" : "interpreter"; }

TEST(HloPartitionerPlugins, MixedModuleRunsOnTestElementwiseAndTheNextPlugin) {
  std::unique_ptr<HloModule> m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  PluginRegistry r = Registry(true);
  absl::StatusOr<ModulePlacement> p = PlaceModule(r, *m);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->whole, nullptr);
  ASSERT_EQ(p->clusters.size(), 4u);
  EXPECT_EQ(p->clusters[0].plugin, "test-elementwise");
  EXPECT_EQ(p->clusters[1].plugin, NextAfterTestPlugin());
  EXPECT_EQ(Names(p->clusters[1]), std::vector<std::string>{"dot"});
  EXPECT_EQ(p->clusters[2].plugin, "test-elementwise");
  EXPECT_EQ(p->clusters[3].plugin, NextAfterTestPlugin());
  EXPECT_EQ(PartitionDeviceNames(p->clusters),
            std::string("test-elementwise+") + NextAfterTestPlugin());
  ExpectSameAsEvaluator(*m, p->clusters);
}

TEST(HloPartitionerPlugins, OnePluginForEverythingMeansNoPartition) {
  std::unique_ptr<HloModule> m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  PluginRegistry r = Registry(false);
  absl::StatusOr<ModulePlacement> p = PlaceModule(r, *m);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_NE(p->whole, nullptr);
  EXPECT_EQ(p->whole->name(), NextAfterTestPlugin());
  EXPECT_TRUE(p->clusters.empty());
}

TEST(HloPartitionerPlugins, ReducePrecisionDeclinedByCpuLlvmFallsToTheInterpreter) {
  if (!KILN_HAVE_CPU_LLVM) GTEST_SKIP() << "cpu-llvm not built";
  std::unique_ptr<HloModule> m = Parse(kRoundingBetween);
  ASSERT_NE(m, nullptr);
  PluginRegistry r = Registry(false);
  absl::StatusOr<ModulePlacement> p = PlaceModule(r, *m);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->whole, nullptr);
  ASSERT_EQ(p->clusters.size(), 3u);
  EXPECT_EQ(p->clusters[0].plugin, "cpu-llvm");
  EXPECT_EQ(p->clusters[1].plugin, "interpreter");
  EXPECT_EQ(Names(p->clusters[1]), std::vector<std::string>{"s"});
  EXPECT_EQ(p->clusters[2].plugin, "cpu-llvm");
  ExpectSameAsEvaluator(*m, p->clusters);
}

// The C example plugin claims multiply/add but compiles only single-array modules: a cluster
// of them with two outputs (a tuple root) moves to the next plugin that runs all of it.
TEST(HloPartitionerPlugins, AClusterThePluginCannotCompileFallsBack) {
  std::unique_ptr<HloModule> m = Parse(R"(HloModule two_outputs
ENTRY %main (x: f32[8], y: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %y = f32[8]{0} parameter(1)
  %a = f32[8]{0} multiply(f32[8]{0} %x, f32[8]{0} %y)
  %b = f32[8]{0} add(f32[8]{0} %a, f32[8]{0} %x)
  %ra = f32[8]{0} reverse(f32[8]{0} %a), dimensions={0}
  %rb = f32[8]{0} reverse(f32[8]{0} %b), dimensions={0}
  ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(f32[8]{0} %ra, f32[8]{0} %rb)
}
)");
  ASSERT_NE(m, nullptr);
  PluginRegistry r =
      PluginRegistry::Discover(DeviceConfig{}, {KILN_EXAMPLE_PLUGIN_DIR, KILN_BUILD_PLUGIN_DIR});
  PartitionOptions no_rule;
  no_rule.min_cluster_size = 1;
  absl::StatusOr<ModulePlacement> p = PlaceModule(r, *m, no_rule);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->clusters.size(), 2u);
  EXPECT_EQ(p->clusters[0].plugin, "elementwise-example");
  EXPECT_EQ(Names(p->clusters[0]), (std::vector<std::string>{"a", "b"}));
  absl::StatusOr<std::unique_ptr<PartitionedExecutable>> exe =
      PartitionedExecutable::Compile(*m, p->clusters);
  ASSERT_TRUE(exe.ok()) << exe.status();
  const HloCluster& moved = (*exe)->clusters()[0];
  EXPECT_EQ(moved.plugin, NextAfterTestPlugin());
  EXPECT_EQ(moved.fallback_note.rfind("elementwise-example failed to compile it (", 0), 0u)
      << moved.fallback_note;
  ExpectSameAsEvaluator(*m, (*exe)->clusters());
}

TEST(HloPartitionerPlugins, CustomCallNobodyRunsIsAClearError) {
  absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(
      R"(HloModule cc
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %n = f32[8]{0} negate(f32[8]{0} %x)
  %cc = f32[8]{0} custom-call(f32[8]{0} %n), custom_call_target="vendor_fft"
  ROOT %e = f32[8]{0} exponential(f32[8]{0} %cc)
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  PluginRegistry r = Registry(true);
  absl::StatusOr<ModulePlacement> p = PlaceModule(r, **m);
  ASSERT_FALSE(p.ok());
  const std::string msg(p.status().message());
  EXPECT_EQ(msg.rfind("no available plugin can run instruction 'cc' (custom-call)", 0), 0u) << msg;
  EXPECT_NE(msg.find("interpreter: 'cc' is a custom-call ('vendor_fft')"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("test-elementwise: 'cc' is 'custom-call', not an elementwise op"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace kiln
