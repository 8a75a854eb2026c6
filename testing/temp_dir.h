// TempDir: a fresh, private directory for one test (or one fixture), removed
// with everything in it when the object is destroyed, so tests leave nothing
// behind in /tmp. It lies under $TMPDIR when set, else /tmp; its name starts
// with "shelfmark_<prefix>_" so a leftover (a test killed by its time-out)
// says whose it is.
//
// Thread safety: path() and Join() may be called from any thread.
#pragma once

#include <string>

namespace shelfmark::testing {

class TempDir {
 public:
  // ADD_FAILURE (GoogleTest) when the directory cannot be made; path() is
  // then empty.
  explicit TempDir(const std::string& prefix = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Absolute path of the directory.
  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace shelfmark::testing
