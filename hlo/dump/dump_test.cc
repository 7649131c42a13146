// Dump files: names, filter, DOT clusters for fusions, HTML page.
#include "hlo/dump/dump.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hlo/passes/fusion_pipeline.h"
#include "hlo/passes/fusion_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::Builder;

std::unique_ptr<HloModule> Softmax() {
  Builder b("softmax");
  Shape s(PrimitiveType::F32, {4, 8});
  auto* x = b.Param(s, "x");
  auto* rowmax = b.Reduce(x, b.Scalar(-1e30), {1}, HloOpcode::kMaximum);
  auto* e =
      b.Unary(HloOpcode::kExp, b.Binary(HloOpcode::kSubtract, x, b.Broadcast(rowmax, {4, 8}, {0})));
  auto* rowsum = b.Reduce(e, b.Scalar(0), {1});
  return b.Finish(b.Binary(HloOpcode::kDivide, e, b.Broadcast(rowsum, {4, 8}, {0})));
}

std::string Read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

fs::path FreshDir(const char* name) {
  fs::path d = fs::temp_directory_path() / (std::string("kiln_dump_test_") + name);
  fs::remove_all(d);
  return d;
}

TEST(Dump, PipelineHookWritesNumberedFilesWithFusionClusters) {
  auto m = Softmax();
  fs::path dir = FreshDir("hook");
  DumpOptions o;
  o.dir = dir.string();
  ModuleDumper dumper(o);
  auto pipeline = MakeFusionPipeline();
  pipeline->set_after_pass_hook(
      [&](std::string_view pass, const HloModule& mod) { dumper.AfterPass(pass, mod); });
  ASSERT_TRUE(pipeline->Run(*m).ok());
  ASSERT_TRUE(dumper.status().ok()) << dumper.status();
  EXPECT_GE(dumper.dumps(), 1);
  EXPECT_TRUE(fs::exists(dir / "softmax.00.fusion.txt"));
  EXPECT_TRUE(fs::exists(dir / "softmax.00.fusion.html"));
  std::string dot = Read(dir / "softmax.00.fusion.dot");
  EXPECT_EQ(Count(dot, "subgraph cluster_"), 2) << dot;
  EXPECT_EQ(Count(dot, "kInput"), 2);
  std::string html = Read(dir / "softmax.00.fusion.html");
  EXPECT_NE(html.find("<html>"), std::string::npos);
  // Either the SVG Graphviz drew or the DOT source for the reader.
  EXPECT_TRUE(html.find("<svg") != std::string::npos || html.find("digraph") != std::string::npos);
  fs::remove_all(dir);
}

TEST(Dump, RegexFilterSkipsOtherPasses) {
  auto m = Softmax();
  fs::path dir = FreshDir("filter");
  ASSERT_TRUE(DumpModule(*m, dir.string(), "pre.", "algsimp", 3, "^fus").ok());
  EXPECT_FALSE(fs::exists(dir / "pre.softmax.03.algsimp.txt"));
  ASSERT_TRUE(DumpModule(*m, dir.string(), "pre.", "fusion", 4, "^fus").ok());
  EXPECT_TRUE(fs::exists(dir / "pre.softmax.04.fusion.txt"));
  fs::remove_all(dir);
}

TEST(Dump, BadRegexIsAnError) {
  auto m = Softmax();
  absl::Status s = DumpModule(*m, FreshDir("bad").string(), "", "fusion", 0, "(");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("regex"), std::string::npos);
}

}  // namespace
}  // namespace kiln
