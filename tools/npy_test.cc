// npy reader/writer against files made and checked by NumPy (tests/npy/*.py), plus
// malformed files that must give errors naming the file.
#include "tools/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string SourceRoot() {
  const char* root = std::getenv("KILN_SOURCE_ROOT");
  return root ? root : ".";
}
std::string Python() {
  const char* p = std::getenv("KILN_NUMPY_PYTHON");
  return p ? p : "/usr/bin/python3";
}

fs::path TempDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("kiln_npy_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The value make_npy_fixtures.py stores at linear index i (real part for complex).
double Expected(PrimitiveType t, int64_t i) {
  if (t == PrimitiveType::PRED) return i % 3 == 0 ? 1 : 0;
  if (IsSignedInt(t)) return static_cast<double>(i - 5);
  if (IsUnsignedInt(t)) return static_cast<double>(i);
  return i * 0.5 - 1;
}

void ExpectValues(const Literal& l, PrimitiveType type, const std::vector<int64_t>& dims,
                  const std::string& what) {
  ASSERT_EQ(l.shape().element_type(), type) << what;
  ASSERT_EQ(l.shape().dimensions(), dims) << what;
  for (int64_t i = 0; i < l.element_count(); ++i) {
    EXPECT_EQ(l.GetAsDouble(i), Expected(type, i)) << what << " at " << i;
    if (type == PrimitiveType::C64) {
      EXPECT_EQ(l.data<std::complex<float>>()[i].imag(), static_cast<float>(1 - i * 0.5)) << what;
    }
    if (type == PrimitiveType::C128) {
      EXPECT_EQ(l.data<std::complex<double>>()[i].imag(), 1 - i * 0.5) << what;
    }
  }
}

const std::map<std::string, PrimitiveType> kCodes = {
    {"b1", PrimitiveType::PRED}, {"i1", PrimitiveType::S8},    {"i2", PrimitiveType::S16},
    {"i4", PrimitiveType::S32},  {"i8", PrimitiveType::S64},   {"u1", PrimitiveType::U8},
    {"u2", PrimitiveType::U16},  {"u4", PrimitiveType::U32},   {"u8", PrimitiveType::U64},
    {"f2", PrimitiveType::F16},  {"f4", PrimitiveType::F32},   {"f8", PrimitiveType::F64},
    {"c8", PrimitiveType::C64},  {"c16", PrimitiveType::C128},
};

class NumpyFixtures : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = TempDir("fixtures");
    std::string cmd =
        Python() + " " + SourceRoot() + "/tests/npy/make_npy_fixtures.py " + dir_.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "could not run: " << cmd;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string File(const std::string& name) { return (dir_ / (name + ".npy")).string(); }
  static fs::path dir_;
};
fs::path NumpyFixtures::dir_;

TEST_F(NumpyFixtures, EveryDtypeBothByteOrders) {
  for (const auto& [code, type] : kCodes) {
    for (const char* order : {"le_", "be_"}) {
      std::string name = order + code;
      absl::StatusOr<Literal> l = ReadNpyFile(File(name));
      ASSERT_TRUE(l.ok()) << name << ": " << l.status();
      ExpectValues(*l, type, {2, 3}, name);
    }
  }
}

TEST_F(NumpyFixtures, FortranOrderIsTransposedToRowMajor) {
  for (const auto& [code, type] : kCodes) {
    std::string name = "fortran_" + code;
    absl::StatusOr<Literal> l = ReadNpyFile(File(name));
    ASSERT_TRUE(l.ok()) << name << ": " << l.status();
    ExpectValues(*l, type, {2, 3, 4}, name);
  }
  absl::StatusOr<Literal> l = ReadNpyFile(File("fortran_be_f4"));
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectValues(*l, PrimitiveType::F32, {3, 2}, "fortran_be_f4");
}

TEST_F(NumpyFixtures, ScalarsEmptyVectorsAndHeaderVersions) {
  struct Case {
    const char* name;
    PrimitiveType type;
    std::vector<int64_t> dims;
  } cases[] = {
      {"scalar_f8", PrimitiveType::F64, {}},  {"empty_f4", PrimitiveType::F32, {0, 3}},
      {"vector_i4", PrimitiveType::S32, {7}}, {"v2_f4", PrimitiveType::F32, {2, 3}},
      {"v3_f4", PrimitiveType::F32, {2, 3}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Literal> l = ReadNpyFile(File(c.name));
    ASSERT_TRUE(l.ok()) << c.name << ": " << l.status();
    ExpectValues(*l, c.type, c.dims, c.name);
  }
}

TEST_F(NumpyFixtures, WrittenFilesLoadInNumpyWithTheRightValues) {
  fs::path out = TempDir("written");
  for (const auto& [code, type] : kCodes) {
    Literal l(Shape(type, {2, 3}));
    for (int64_t i = 0; i < 6; ++i) l.SetFromDouble(i, Expected(type, i));
    if (type == PrimitiveType::C64) {
      for (int64_t i = 0; i < 6; ++i)
        l.data<std::complex<float>>()[i] = {float(i * 0.5 - 1), float(1 - i * 0.5)};
    }
    if (type == PrimitiveType::C128) {
      for (int64_t i = 0; i < 6; ++i)
        l.data<std::complex<double>>()[i] = {i * 0.5 - 1, 1 - i * 0.5};
    }
    ASSERT_TRUE(WriteNpyFile((out / ("kiln_" + code + ".npy")).string(), l).ok());
  }
  std::string cmd = Python() + " " + SourceRoot() + "/tests/npy/check_kiln_npy.py " + out.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(out);
}

TEST(Npy, Bf16IsWrittenAsFloat32) {
  Literal l(Shape(PrimitiveType::BF16, {3}));
  l.SetFromDouble(0, 1.5);
  l.SetFromDouble(1, -2.0);
  l.SetFromDouble(2, 0.15625);
  absl::StatusOr<std::string> bytes = SerializeNpy(l);
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("'descr': '<f4'"), std::string::npos);
  absl::StatusOr<Literal> back = ParseNpy(*bytes, "bf16.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->shape().element_type(), PrimitiveType::F32);
  EXPECT_EQ(back->data<float>()[0], 1.5f);
  EXPECT_EQ(back->data<float>()[1], -2.0f);
  EXPECT_EQ(back->data<float>()[2], 0.15625f);
}

TEST(Npy, HeaderIsPaddedTo64Bytes) {
  Literal l(Shape(PrimitiveType::F32, {2, 3}));
  absl::StatusOr<std::string> bytes = SerializeNpy(l);
  ASSERT_TRUE(bytes.ok());
  // 6 floats of data after a header whose total length is a multiple of 64.
  EXPECT_EQ((bytes->size() - 24) % 64, 0u);
  EXPECT_EQ((*bytes)[bytes->size() - 24 - 1], '\n');
}

// A valid header for `dict` (version 1.0) followed by `data`.
std::string MakeFile(const std::string& dict, const std::string& data) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict + data;
}

void ExpectError(const std::string& bytes, const std::string& phrase) {
  absl::StatusOr<Literal> l = ParseNpy(bytes, "bad.npy");
  ASSERT_FALSE(l.ok()) << "accepted a file that should fail with '" << phrase << "'";
  std::string msg(l.status().message());
  EXPECT_EQ(msg.rfind("bad.npy: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(phrase), std::string::npos) << msg;
}

TEST(Npy, MalformedFilesGiveErrorsNamingTheFile) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  ASSERT_TRUE(ParseNpy(MakeFile(ok_dict, std::string(8, '\0')), "ok.npy").ok());
  ExpectError("", "bad magic");
  ExpectError("PK\x03\x04 zip file", "bad magic");
  ExpectError(std::string("\x93NUMPY\x01", 7), "truncated header");
  ExpectError(MakeFile(ok_dict, "").substr(0, 30), "truncated header");
  ExpectError(std::string("\x93NUMPY\x04\x00\x00\x00", 10), "version 4.0");
  ExpectError(
      MakeFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", std::string(8, '\0')),
      "bad header dict");
  ExpectError(MakeFile("['descr']", ""), "not a dict");
  ExpectError(MakeFile("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", ""),
              "fortran_order");
  ExpectError(MakeFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", ""),
              "non-negative");
  ExpectError(MakeFile("{'descr': '<f4', 'shape': (2,), }", std::string(8, '\0')),
              "no 'fortran_order'");
  ExpectError(MakeFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", ""),
              "unexpected header key");
  ExpectError(MakeFile(ok_dict, std::string(7, '\0')), "data size mismatch");
  ExpectError(MakeFile(ok_dict, std::string(12, '\0')), "data size mismatch");
  ExpectError(
      MakeFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
               std::string(8, '\0')),
      "data size mismatch");
  ExpectError(
      MakeFile("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", std::string(16, '\0')),
      "unsupported dtype '<U4'");
  ExpectError(
      MakeFile("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
      "unsupported dtype");
  ExpectError(MakeFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                       std::string(4, '\0')),
              "structured");
  ExpectError(
      MakeFile("{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0')),
      "byte order '|'");
}

TEST(Npy, EveryTruncationOfAValidFileIsRejectedCleanly) {
  Literal l(Shape(PrimitiveType::S16, {3, 2}));
  absl::StatusOr<std::string> bytes = SerializeNpy(l);
  ASSERT_TRUE(bytes.ok());
  for (size_t n = 0; n < bytes->size(); ++n) {
    EXPECT_FALSE(ParseNpy(bytes->substr(0, n), "t.npy").ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(ParseNpy(*bytes, "t.npy").ok());
}

TEST(Npy, MissingFileIsNamed) {
  absl::StatusOr<Literal> l = ReadNpyFile("/nonexistent/dir/x.npy");
  ASSERT_FALSE(l.ok());
  EXPECT_NE(std::string(l.status().message()).find("/nonexistent/dir/x.npy"), std::string::npos);
}

}  // namespace
}  // namespace kiln
