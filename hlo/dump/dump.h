// Module dumps for humans: the text after a pass (`<module>.<NN>.<pass>.txt`), and a graph
// of the entry computation as Graphviz DOT plus an HTML page (with an SVG rendering when
// the `dot` program is installed; otherwise the page carries the DOT source and the text).
// Fusions are drawn as clusters holding their fused instructions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "hlo/module.h"

namespace kiln {

struct DumpOptions {
  std::string dir;         // created when missing
  std::string prefix;      // put before every file name
  std::string pass_regex;  // only passes whose name matches (ECMAScript search); "" = all
  bool graph = true;       // also write .dot and .html
};

// Writes the dump files of `module` after `pass_name`, numbered `sequence`. Does nothing
// (and succeeds) when the pass name does not match `options.pass_regex`. A bad regex or an
// unwritable directory is an error naming the thing.
absl::Status DumpModule(const HloModule& module, const DumpOptions& options,
                        std::string_view pass_name, int sequence);
// The shorthand the pipeline hook wants: dir, prefix, pass, sequence 0..
absl::Status DumpModule(const HloModule& module, std::string_view dir, std::string_view prefix,
                        std::string_view pass_name, int sequence = 0,
                        std::string_view pass_regex = "");

// Writes a text report that goes with a dump (`<module>.<NN>.<name>.txt`, say a buffer
// assignment), numbered like the module dump it describes.
absl::Status DumpReport(const HloModule& module, std::string_view dir, std::string_view name,
                        int sequence, std::string_view text);

// The entry computation as a Graphviz digraph, fusions as clusters.
std::string ModuleToDot(const HloModule& module);

// Counts dumps and keeps the first error: plug `AfterPass` into
// HloPassPipeline::set_after_pass_hook.
class ModuleDumper {
 public:
  explicit ModuleDumper(DumpOptions options) : options_(std::move(options)) {}
  void AfterPass(std::string_view pass_name, const HloModule& module);
  const absl::Status& status() const { return status_; }
  int dumps() const { return sequence_; }

 private:
  DumpOptions options_;
  int sequence_ = 0;
  absl::Status status_;
};

}  // namespace kiln
