// The sandbox's network files.
#include "sentry/net/sandbox_network.h"

#include "absl/strings/str_cat.h"

namespace usentry::sentry::net {

std::vector<std::pair<std::string, std::string>> SandboxNetworkFiles(const std::string& hostname,
                                                                     bool host_alias) {
  std::string hosts =
      absl::StrCat("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t",
                   hostname, "\n");
  if (host_alias) absl::StrAppend(&hosts, GatewayAddress().ToString(), "\t", kHostAlias, "\n");
  return {
      {"/etc/resolv.conf",
       absl::StrCat("# usentry: the sandbox's resolver; it answers only names the policy "
                    "allows\nnameserver ",
                    ResolverAddress().ToString(), "\n")},
      {"/etc/hosts", hosts},
      {"/etc/hostname", absl::StrCat(hostname, "\n")},
  };
}

}  // namespace usentry::sentry::net
