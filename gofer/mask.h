// MaskSet: which paths of one gofer tree are hidden from the sentry, by relative path
// pattern and by the (dev, ino) of every file those patterns matched at start-up.
#ifndef USENTRY_GOFER_MASK_H_
#define USENTRY_GOFER_MASK_H_

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace usentry::gofer {

class MaskSet {
 public:
  MaskSet() = default;

  // Resolves each fnmatch pattern (relative, '/'-separated, e.g. "etc/ssh/*key*") beneath
  // root_fd (a directory FD; not owned) without following symlinks, and records the
  // (dev, ino) of every match and, for a matched directory, of everything beneath it,
  // so other hard links to those files are hidden too. Patterns that match nothing, or
  // lead through a directory the gofer cannot read, are kept for path matching only.
  // Errors: an absolute or empty pattern, or an unexpected host error.
  static absl::StatusOr<MaskSet> Build(int root_fd, const std::vector<std::string>& patterns);

  // True if rel (relative to the tree root, "" for the root) or one of its ancestors
  // matches a pattern.
  bool MatchesPath(std::string_view rel) const;
  // True if rel is a proper ancestor of paths a pattern could match (renaming it would
  // move masked files to an unmasked path).
  bool IsAncestorOfMask(std::string_view rel) const;
  // True if a matched file had this inode at start-up.
  bool MatchesInode(uint64_t dev, uint64_t ino) const { return inodes_.count({dev, ino}) != 0; }
  // Cheap pre-check on a bare inode number (getdents reports no dev).
  bool MayMatchIno(uint64_t ino) const { return inos_.count(ino) != 0; }
  bool empty() const { return patterns_.empty(); }
  size_t inode_count() const { return inodes_.size(); }

 private:
  absl::Status Expand(int dir_fd, const std::string& rel, const std::vector<std::string>& parts,
                      size_t index);
  absl::Status AddTree(int fd, const std::string& rel, int depth);
  void AddInode(uint64_t dev, uint64_t ino);

  std::vector<std::vector<std::string>> patterns_;  // split on '/'
  std::set<std::pair<uint64_t, uint64_t>> inodes_;
  std::unordered_set<uint64_t> inos_;
  size_t visited_ = 0;
};

}  // namespace usentry::gofer

#endif  // USENTRY_GOFER_MASK_H_
