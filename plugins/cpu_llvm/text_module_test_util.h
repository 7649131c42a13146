// Tests of cpu-llvm that start from HLO text: parse and compile in one call.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/llvm_emitter/codegen_test_util.h"

namespace kiln::cpu::testing {

struct CompiledText {
  std::shared_ptr<const HloModule> module;
  std::shared_ptr<const CpuExecutable> exe;  // null when parsing or compiling failed
};

// Parses `text` and compiles it with `options`; a failure is reported as a test failure.
inline CompiledText CompileText(const std::string& text, const CompileOptions& options = {}) {
  CompiledText c;
  auto parsed = ParseHloModule(text, "test");
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  if (!parsed.ok()) return c;
  c.module = std::shared_ptr<const HloModule>(std::move(*parsed));
  auto compiler = CpuCompiler::Create(options);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  if (!compiler.ok()) return c;
  auto exe = (*compiler)->Compile(c.module);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (exe.ok()) c.exe = std::move(*exe);
  return c;
}

// Compiles `text` for `threads` threads and runs it on random arguments (from `seed`)
// against the HLO evaluator within `tolerance`; returns the optimized IR ("" after a
// failure, which is reported).
inline std::string CompareTextWithEvaluator(const std::string& text, int threads,
                                            double tolerance = 1e-6, uint32_t seed = 11) {
  CompileOptions options;
  options.threads = threads;
  options.keep_ir = true;
  const CompiledText c = CompileText(text, options);
  if (c.exe == nullptr) return "";
  const std::vector<Literal> args = codegen_testing::RandomArguments(*c.module, seed).values;
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return "";
  codegen_testing::ExpectClose(*got, *want, fmt::format("{} threads", threads), "jit", tolerance);
  return c.exe->llvm_ir();
}

// The arrays of a result: the literal itself, or a tuple's elements.
inline std::vector<const Literal*> ArrayLeaves(const Literal& l) {
  if (!l.IsTuple()) return {&l};
  std::vector<const Literal*> leaves;
  for (const Literal& e : l.elements()) leaves.push_back(&e);
  return leaves;
}

}  // namespace kiln::cpu::testing
