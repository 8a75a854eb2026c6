#include "auth/credentials.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace shelfmark::auth {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::string> ParseTokenWord(std::string_view text) {
  std::string_view word = Trim(text);
  if (word.empty()) return ErrorCode::INVALID_PARAMS;
  for (char c : word) {
    if (IsSpace(c)) return ErrorCode::INVALID_PARAMS;
  }
  return std::string(word);
}

Result<std::string> ReadSecretFile(const std::string& path, std::string* warning) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? ErrorCode::FILE_NOT_FOUND : ErrorCode::FILE_READ_FAIL;
  }
  if (!S_ISREG(st.st_mode)) return ErrorCode::FILE_READ_FAIL;
  std::ifstream in(path);
  if (!in) return ErrorCode::FILE_READ_FAIL;
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrorCode::FILE_READ_FAIL;
  if (warning != nullptr && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    *warning = "token file " + path + " is readable by other users (chmod 600 it)";
  }
  return text.str();
}

Result<std::string> ReadTokenFile(const std::string& path, std::string* warning) {
  auto text = ReadSecretFile(path, warning);
  if (!text.ok()) return text.error();
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    return ParseTokenWord(t);
  }
  return ErrorCode::INVALID_PARAMS;
}

Result<std::string> ResolveToken(const TokenSources& sources, std::string* warning) {
  if (!sources.file.empty()) return ReadTokenFile(sources.file, warning);
  if (!sources.literal.empty()) {
    if (warning != nullptr) {
      *warning = "--" + sources.flag_name +
                 " shows the token to every user of this host (ps); prefer --" +
                 sources.flag_name + "_file" +
                 (sources.env != nullptr ? std::string(" or ") + sources.env : std::string());
    }
    return ParseTokenWord(sources.literal);
  }
  if (sources.env != nullptr) {
    if (const char* value = std::getenv(sources.env); value != nullptr && *value != '\0') {
      return ParseTokenWord(value);
    }
  }
  return std::string();
}

}  // namespace shelfmark::auth
