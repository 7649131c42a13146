// The on-disk artifact cache: round trips, misses, and damaged entries read as misses.
#include "plugins/common/disk_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace kiln {
namespace {

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kiln_disk_cache_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(DiskCacheTest, StoresAndLoadsByFullKey) {
  DiskCache cache((dir_ / "nested").string());  // created on first store
  EXPECT_FALSE(cache.Load("key-a").has_value());
  std::string blob("object\0bytes\xff", 13);
  ASSERT_TRUE(cache.Store("key-a", blob).ok());
  EXPECT_TRUE(std::filesystem::exists(cache.PathFor("key-a")));
  std::optional<std::string> got = cache.Load("key-a");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, blob);
  EXPECT_FALSE(cache.Load("key-b").has_value());
  // An overwrite replaces the entry.
  ASSERT_TRUE(cache.Store("key-a", "second").ok());
  EXPECT_EQ(cache.Load("key-a").value_or(""), "second");
}

TEST_F(DiskCacheTest, OtherKeyInTheSameFileIsAMiss) {
  DiskCache cache(dir_.string());
  ASSERT_TRUE(cache.Store("key-a", "artifact").ok());
  // Simulate a hash collision: key-b's file holds key-a's entry.
  std::filesystem::copy_file(cache.PathFor("key-a"), cache.PathFor("key-b"));
  EXPECT_FALSE(cache.Load("key-b").has_value());
}

TEST_F(DiskCacheTest, DamagedEntriesAreMisses) {
  DiskCache cache(dir_.string());
  ASSERT_TRUE(cache.Store("k", std::string(1000, 'x')).ok());
  const std::string path = cache.PathFor("k");
  {  // flip one artifact byte: checksum mismatch
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('y');
  }
  EXPECT_FALSE(cache.Load("k").has_value());
  ASSERT_TRUE(cache.Store("k", std::string(1000, 'x')).ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);  // truncated
  EXPECT_FALSE(cache.Load("k").has_value());
  { std::ofstream(path, std::ios::trunc) << "garbage"; }  // not an entry at all
  EXPECT_FALSE(cache.Load("k").has_value());
}

TEST_F(DiskCacheTest, FromEnvNeedsANonEmptyVariable) {
  ::unsetenv("KILN_TEST_CACHE_DIR");
  EXPECT_FALSE(DiskCache::FromEnv("KILN_TEST_CACHE_DIR").has_value());
  ::setenv("KILN_TEST_CACHE_DIR", "", 1);
  EXPECT_FALSE(DiskCache::FromEnv("KILN_TEST_CACHE_DIR").has_value());
  ::setenv("KILN_TEST_CACHE_DIR", dir_.c_str(), 1);
  ASSERT_TRUE(DiskCache::FromEnv("KILN_TEST_CACHE_DIR").has_value());
  EXPECT_EQ(DiskCache::FromEnv("KILN_TEST_CACHE_DIR")->dir(), dir_.string());
}

TEST(BinaryIdentity, NamesThisExecutable) {
  std::string id = BinaryIdentity(reinterpret_cast<const void*>(&BinaryIdentity));
  EXPECT_NE(id.find("disk_cache_test"), std::string::npos) << id;
  EXPECT_NE(id.find("mtime="), std::string::npos) << id;
}

}  // namespace
}  // namespace kiln
