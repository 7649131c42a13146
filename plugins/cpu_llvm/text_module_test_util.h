// Tests of cpu-llvm that start from HLO text: parse and compile in one call.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"

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

// The arrays of a result: the literal itself, or a tuple's elements.
inline std::vector<const Literal*> ArrayLeaves(const Literal& l) {
  if (!l.IsTuple()) return {&l};
  std::vector<const Literal*> leaves;
  for (const Literal& e : l.elements()) leaves.push_back(&e);
  return leaves;
}

}  // namespace kiln::cpu::testing
