// The gofer server: the only process that opens host paths of the sandbox's trees. It
// serves gofer::Client requests on a SOCK_SEQPACKET socket, resolving one component at a
// time beneath each tree root without following symlinks or "..", hiding masked paths,
// refusing writes to read-only trees, and donating opened FDs by SCM_RIGHTS.
#ifndef USENTRY_GOFER_SERVER_H_
#define USENTRY_GOFER_SERVER_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/unique_fd.h"

namespace usentry::gofer {

// One host directory served as a tree the sentry can Attach() to by name.
struct TreeConfig {
  std::string name;       // "root", "mount0", ...
  std::string host_path;  // absolute host directory, opened once at start-up
  bool read_only = true;
  // When set, only these names exist at the tree root (others are ENOENT and absent
  // from ReadDir; creating one is EACCES).
  std::optional<std::set<std::string>> top_level_allowlist;
  // fnmatch(3) patterns (FNM_PATHNAME) on paths relative to the tree root, e.g.
  // "etc/ssh/*key*". A matching path is ENOENT on Walk and absent from ReadDir; so is
  // any other link to an inode that matched at start-up (a hard link to /etc/shadow).
  std::vector<std::string> masks;
};

struct GoferConfig {
  std::vector<TreeConfig> trees;
  // Set when the gofer runs as another host uid than the caller's (started as root, the
  // caller's gofer becomes host nobody keeping only file-access capabilities): what it
  // creates is then chowned to these ids, as if the caller had made it, with the group
  // of a set-group-ID directory kept.
  struct Owner {
    uint32_t uid = 0, gid = 0;
  };
  std::optional<Owner> new_owner;
};

// Host "/" as tree "root", read-only: only usr, bin, sbin, lib*, etc at the top level,
// with host secrets (shadow, gshadow, ssh host keys, sudoers, ssl private keys) masked.
TreeConfig DefaultRootTree();
// An extracted image directory as tree "root", read-only, nothing masked.
TreeConfig RootfsTree(std::string dir);
// A --mount source as tree "mount<index>".
TreeConfig MountTree(int index, std::string src, bool read_only);

// Serves requests on sock until the peer closes it, then returns OK. Errors: a tree root
// that cannot be opened or a mask that cannot be resolved at start-up, or a broken
// socket. Requests that fail are answered with an errno, never end the loop.
// Needs /proc mounted (FDs are reopened through /proc/self/fd). `confine`, if set, runs
// once the tree roots are open and before the first request (the gofer's
// self-confinement); its error ends Serve.
absl::Status Serve(const GoferConfig& config, UniqueFd sock,
                   const std::function<absl::Status()>& confine = nullptr);

}  // namespace usentry::gofer

#endif  // USENTRY_GOFER_SERVER_H_
