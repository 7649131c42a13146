// The SPMD partitioner against JAX: modules JAX lowered with sharding annotations
// (tests/data/spmd, written by make_cases.py) are partitioned and run on N devices of the
// evaluator; each device's result must be the shard JAX computed on that device, and the
// unpartitioned module on one device must give JAX's whole result.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/evaluator/multi_device.h"
#include "hlo/passes/spmd_partitioner.h"
#include "hlo/passes/test_util.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"

namespace kiln {
namespace {

using testing::Near;

std::string ReadCase(const std::string& file) {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  std::filesystem::path path =
      std::filesystem::path(root ? root : ".") / "tests" / "data" / "spmd" / file;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path << " is missing (set KILN_SOURCE_ROOT)";
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The constants of NAME.values.hlo by name.
std::map<std::string, Literal> ReadValues(const std::string& name) {
  absl::StatusOr<std::unique_ptr<HloModule>> m =
      ParseHloModule(ReadCase(name + ".values.hlo"), name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  std::map<std::string, Literal> out;
  if (!m.ok()) return out;
  for (const HloInstruction* h : (*m)->entry()->instructions())
    if (h->opcode() == HloOpcode::kConstant) out.emplace(h->name(), h->literal());
  return out;
}

// The arrays of a result: itself, or the elements of a tuple.
std::vector<const Literal*> Arrays(const Literal& l) {
  std::vector<const Literal*> out;
  if (!l.IsTuple()) return {&l};
  for (const Literal& e : l.elements()) out.push_back(&e);
  return out;
}

// `whole`: also run the module as JAX wrote it on one device (not when it holds a
// custom-call "Sharding", which only the partitioner understands).
void CheckCase(const std::string& name, int n, bool whole = true) {
  SCOPED_TRACE(name);
  std::map<std::string, Literal> values = ReadValues(name);
  absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(ReadCase(name + ".hlo"), name);
  ASSERT_TRUE(m.ok()) << m.status().message();
  HloModule& module = **m;
  const int params = module.entry()->num_parameters();

  // The module as JAX wrote it, on one device, gives JAX's whole result.
  if (whole) {
    std::vector<Literal> args;
    for (int i = 0; i < params; ++i) args.push_back(Literal(values.at("arg" + std::to_string(i))));
    HloEvaluator evaluator;
    absl::StatusOr<Literal> one = evaluator.Evaluate(module, args);
    ASSERT_TRUE(one.ok()) << one.status().message();
    std::vector<const Literal*> one_arrays = Arrays(*one);
    for (size_t j = 0; j < one_arrays.size(); ++j)
      EXPECT_TRUE(Near(*one_arrays[j], values.at("out" + std::to_string(j)))) << "output " << j;
  }
  size_t outputs = 0;
  while (values.count("out" + std::to_string(outputs))) ++outputs;

  SpmdPartitioner pass(n);
  absl::StatusOr<bool> changed = pass.Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  absl::Status valid = VerifyModule(module);
  ASSERT_TRUE(valid.ok()) << valid.message() << "\n" << module.ToString();

  // SPMD_PRINT=1 shows the partitioned program, for reading it.
  if (std::getenv("SPMD_PRINT")) std::cerr << module.ToString() << "\n";
  // Each device, given the shards JAX put on it, computes the shards JAX has there.
  std::vector<std::vector<Literal>> args(n);
  for (int d = 0; d < n; ++d)
    for (int i = 0; i < params; ++i)
      args[d].push_back(Literal(values.at("arg" + std::to_string(i) + ".dev" + std::to_string(d))));
  absl::StatusOr<std::vector<Literal>> results =
      EvaluateOnDevices(module, DeviceGrid{1, n}, std::move(args));
  ASSERT_TRUE(results.ok()) << results.status().message() << "\n" << module.ToString();
  ASSERT_EQ(results->size(), static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    std::vector<const Literal*> arrays = Arrays((*results)[d]);
    ASSERT_EQ(arrays.size(), outputs);
    for (size_t j = 0; j < arrays.size(); ++j)
      EXPECT_TRUE(
          Near(*arrays[j], values.at("out" + std::to_string(j) + ".dev" + std::to_string(d))))
          << "output " << j << " on device " << d << "\n"
          << module.ToString();
  }
}

TEST(SpmdPartitionerJaxTest, MegatronMlpOnA2x2Mesh) { CheckCase("mlp_2x2", 4); }
TEST(SpmdPartitionerJaxTest, DataParallelLoss) {
  CheckCase("dp_loss_n2", 2);
  CheckCase("dp_loss_n4", 4);
}
TEST(SpmdPartitionerJaxTest, DotSplitOnContractingDim) {
  CheckCase("contract_n2", 2);
  CheckCase("contract_n4", 4);
}
TEST(SpmdPartitionerJaxTest, BroadcastElementwiseAndMaxOverShards) {
  CheckCase("bias_max_n2", 2);
  CheckCase("bias_max_n4", 4);
}
TEST(SpmdPartitionerJaxTest, ShardingConstraintReshardsRowsToColumns) {
  CheckCase("constraint_n4", 4, /*whole=*/false);
}

}  // namespace
}  // namespace kiln
