// `kiln aot ...`: runs kiln-aot, the ahead-of-time compiler built on cpu-llvm's code generator,
// which is installed beside this program (it links LLVM; `kiln` does not). KILN_AOT_COMPILER
// names another one.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tools/commands.h"

namespace kiln {

int AotCommand(const std::vector<std::string>& args) {
  std::filesystem::path compiler;
  std::error_code error;
  if (const char* env = std::getenv("KILN_AOT_COMPILER"); env != nullptr && *env != '\0')
    compiler = env;
  else
    compiler = std::filesystem::read_symlink("/proc/self/exe", error).parent_path() / "kiln-aot";
  std::vector<char*> argv;
  std::string program = compiler.string();
  argv.push_back(program.data());
  std::vector<std::string> copies(args);
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  // Only reached when the compiler could not be started.
  return ReportError("aot", "cannot run the ahead-of-time compiler " + program + ": " +
                                std::strerror(errno) +
                                " (it is built with the cpu-llvm plugin, when LLVM is found; "
                                "KILN_AOT_COMPILER names another)");
}

}  // namespace kiln
