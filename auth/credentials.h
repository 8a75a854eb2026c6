// Credentials of a process: the token it proves to the master and to the
// nodes (docs/security.md, "Tokens").
//
// Every program takes its token the same way, first found wins:
//   1. a file (--cluster_token_file=PATH): the first line that is neither
//      empty nor a comment ('#'), trimmed; it must be one word;
//   2. a literal flag value (--cluster_token=T), accepted with a warning: it
//      shows in `ps` and in /proc/PID/cmdline to every user of the host;
//   3. an environment variable (SHELFMARK_CLUSTER_TOKEN).
// No source at all is not an error: the empty token means "no
// authentication" (a master without tokens serves everyone; nodes and
// clients with the empty token accept each other, as before tokens existed).
//
// Thread safety: free functions; ResolveToken reads the environment.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace shelfmark::auth {

// The environment variables programs read their tokens from.
inline constexpr const char* kClusterTokenEnv = "SHELFMARK_CLUSTER_TOKEN";
inline constexpr const char* kMasterTokenEnv = "SHELFMARK_MASTER_TOKEN";

// The whole text of a secret file (a token file, the master's token table).
// FILE_NOT_FOUND, FILE_READ_FAIL (not a regular file, unreadable).
// `*warning` (if given) is set when other users of the host can read it.
Result<std::string> ReadSecretFile(const std::string& path, std::string* warning = nullptr);

// The token in a one-token file. FILE_NOT_FOUND, FILE_READ_FAIL (unreadable),
// INVALID_PARAMS (no token line, or a line of several words). `*warning` (if
// given) is set when the file can be read by other users of the host.
Result<std::string> ReadTokenFile(const std::string& path, std::string* warning = nullptr);

// Where a program may find its token (any may be empty / null).
struct TokenSources {
  std::string file;        // --..._token_file
  std::string literal;     // --..._token
  const char* env = nullptr;  // variable name, e.g. kClusterTokenEnv
  std::string flag_name = "cluster_token";  // for the warning's text
};

// The token of the first source present (order above); "" when none is.
// Errors are ReadTokenFile's. `*warning` gets a line for the operator when a
// literal flag value was used or the file is readable by others.
Result<std::string> ResolveToken(const TokenSources& sources, std::string* warning);

// The one word of a token line: `text` trimmed; INVALID_PARAMS when it is
// empty or contains white space.
Result<std::string> ParseTokenWord(std::string_view text);

}  // namespace shelfmark::auth
