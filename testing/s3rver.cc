#include "testing/s3rver.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "testing/process_util.h"

namespace shelfmark::testing {
namespace {

constexpr char kScript[] = SHELFMARK_SOURCE_DIR "/scripts/s3rver.sh";

// `s` in single quotes for sh.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

// Runs scripts/s3rver.sh with `args`; its exit status (-1 if it did not
// run). The server exits with this process (S3RVER_PARENT_PID).
int RunScript(const std::string& args) {
  setenv("S3RVER_PARENT_PID", std::to_string(getpid()).c_str(), 1);
  const int status = std::system((Quote(kScript) + " " + args).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

S3rver::S3rver(const std::string& bucket) : bucket_(bucket) {
  if (dir_.path().empty()) return;
  port_ = FreePort();
  status_ = RunScript("start " + Quote(dir_.path()) + " " + std::to_string(port_) + " " +
                      Quote(bucket_));
}

S3rver::~S3rver() { Stop(); }  // before dir_ goes

std::string S3rver::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

void S3rver::Stop() {
  if (status_ == 0) RunScript("stop " + Quote(dir_.path()));
  status_ = -1;
}

std::string S3rver::StartFailure() const {
  std::string text =
      "s3rver did not start (scripts/s3rver.sh exit " + std::to_string(status_) + ": ";
  switch (status_) {
    case 3:
      return text + "a program it needs is not installed (its message is above); the S3 "
                    "tests need node, npm and curl (Debian: apt-get install nodejs npm curl))";
    case 4:
      return text + "the server did not come up; its log is above)";
    case 5:
      return text + "npm could not install s3rver; npm's exit status and output are above)";
    default:
      return text + "see scripts/s3rver.sh)";
  }
}

}  // namespace shelfmark::testing
