#include "auth/credential_flags.h"

#include <cstdio>

#include "auth/credentials.h"

namespace shelfmark::auth {
namespace {

// Prints a warning or an error about `what` as one line of `program`.
void Say(std::string_view program, std::string_view kind, const std::string& what) {
  std::fprintf(stderr, "%.*s: %.*s%s\n", static_cast<int>(program.size()), program.data(),
               static_cast<int>(kind.size()), kind.data(), what.c_str());
}

Result<std::string> ResolveOne(std::string_view program, const TokenSources& sources) {
  std::string warning;
  auto token = ResolveToken(sources, &warning);
  if (!warning.empty()) Say(program, "warning: ", warning);
  if (!token.ok()) {
    std::string where = !sources.file.empty() ? "--" + sources.flag_name + "_file=" + sources.file
                        : !sources.literal.empty() ? "--" + sources.flag_name
                                                   : std::string(sources.env);
    Say(program, "", where + ": " + std::string(ErrorCodeName(token.error())) +
                         " (a token is one word: the first line that is not a comment)");
  }
  return token;
}

}  // namespace

void CredentialFlags::Add(FlagSet& flags) {
  flags.AddString("cluster_token_file", &cluster_token_file,
                  "file holding the cluster token (nodes and clients prove it to each other, "
                  "and to the master unless --master_token_file is given)");
  flags.AddString("cluster_token", &cluster_token,
                  "the cluster token itself (visible in ps: prefer --cluster_token_file or "
                  "SHELFMARK_CLUSTER_TOKEN)");
  flags.AddString("master_token_file", &master_token_file,
                  "file holding the token proven to the master (else SHELFMARK_MASTER_TOKEN, "
                  "else the cluster token)");
}

Result<Credentials> CredentialFlags::Resolve(std::string_view program) const {
  Credentials out;
  auto cluster = ResolveOne(program, {cluster_token_file, cluster_token, kClusterTokenEnv,
                                      "cluster_token"});
  if (!cluster.ok()) return cluster.error();
  out.cluster_token = *cluster;
  auto master = ResolveOne(program, {master_token_file, "", kMasterTokenEnv, "master_token"});
  if (!master.ok()) return master.error();
  out.master_token = master->empty() ? out.cluster_token : *master;
  return out;
}

}  // namespace shelfmark::auth
