// MaskSet: start-up resolution of mask patterns and path/inode matching (see mask.h).
#include "gofer/mask.h"

#include <fcntl.h>
#include <fnmatch.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gofer/host_fs.h"

namespace usentry::gofer {
namespace {

// Bounds the start-up walk below masked directories (e.g. a huge etc/ssl/private).
constexpr size_t kMaxMaskedInodes = 100000;
constexpr int kMaxMaskDepth = 32;

bool HasGlob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::string Join(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

// Splits on '/' (absl::StrSplit takes absl::string_view, which is not std::string_view in
// this Abseil build).
std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Errors that mean "nothing the gofer could ever serve here", not a set-up failure.
bool Unreachable(int err) { return err == ENOENT || err == ENOTDIR || err == EACCES; }

}  // namespace

absl::StatusOr<MaskSet> MaskSet::Build(int root_fd, const std::vector<std::string>& patterns) {
  MaskSet set;
  for (const std::string& p : patterns) {
    if (p.empty() || p[0] == '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("mask \"", p, "\" must be a non-empty path relative to the tree root"));
    }
    std::vector<std::string> parts;
    for (std::string_view part : SplitPath(p)) parts.emplace_back(part);
    for (const std::string& part : parts) {
      if (part == "." || part == "..") {
        return absl::InvalidArgumentError(absl::StrCat("mask \"", p, "\" contains . or .."));
      }
    }
    set.patterns_.push_back(parts);
    RETURN_IF_ERROR(set.Expand(root_fd, "", parts, 0));
  }
  return set;
}

absl::Status MaskSet::Expand(int dir_fd, const std::string& rel,
                             const std::vector<std::string>& parts, size_t index) {
  const std::string& part = parts[index];
  std::vector<std::string> names;
  if (HasGlob(part)) {
    SysResult<bool> listed =
        ListDir(dir_fd, 0, [&](std::string_view name, uint64_t, uint8_t, uint64_t) {
          if (fnmatch(part.c_str(), std::string(name).c_str(), 0) == 0) names.emplace_back(name);
          return true;
        });
    if (!listed.ok()) {
      if (Unreachable(listed.error())) return absl::OkStatus();
      return ErrnoStatus(absl::StrCat("getdents64(\"", rel, "\")"), listed.error());
    }
  } else {
    names.push_back(part);
  }
  for (const std::string& name : names) {
    std::string child_rel = Join(rel, name);
    SysResult<UniqueFd> fd = OpenBeneath(dir_fd, name, O_PATH);
    if (!fd.ok()) {
      if (Unreachable(fd.error()) || fd.error() == ELOOP) continue;
      return ErrnoStatus(absl::StrCat("openat2(dirfd=", dir_fd, ", \"", name, "\")"), fd.error());
    }
    SysResult<struct stat> st = StatFd(fd->get());
    if (!st.ok()) return ErrnoStatus(absl::StrCat("fstatat(\"", child_rel, "\")"), st.error());
    if (index + 1 == parts.size()) {
      AddInode(st->st_dev, st->st_ino);
      if (S_ISDIR(st->st_mode)) RETURN_IF_ERROR(AddTree(fd->get(), child_rel, 0));
    } else if (S_ISDIR(st->st_mode)) {
      RETURN_IF_ERROR(Expand(fd->get(), child_rel, parts, index + 1));
    }
  }
  return absl::OkStatus();
}

absl::Status MaskSet::AddTree(int fd, const std::string& rel, int depth) {
  if (depth >= kMaxMaskDepth) return absl::OkStatus();
  std::vector<std::string> children;
  SysResult<bool> listed = ListDir(fd, 0, [&](std::string_view name, uint64_t, uint8_t, uint64_t) {
    children.emplace_back(name);
    return true;
  });
  if (!listed.ok()) {
    if (Unreachable(listed.error())) return absl::OkStatus();
    return ErrnoStatus(absl::StrCat("getdents64(\"", rel, "\")"), listed.error());
  }
  for (const std::string& name : children) {
    if (visited_ >= kMaxMaskedInodes) return absl::OkStatus();
    ++visited_;
    SysResult<UniqueFd> child = OpenBeneath(fd, name, O_PATH);
    if (!child.ok()) continue;  // vanished or unreadable: nothing to hide
    SysResult<struct stat> st = StatFd(child->get());
    if (!st.ok()) continue;
    AddInode(st->st_dev, st->st_ino);
    if (S_ISDIR(st->st_mode)) RETURN_IF_ERROR(AddTree(child->get(), Join(rel, name), depth + 1));
  }
  return absl::OkStatus();
}

void MaskSet::AddInode(uint64_t dev, uint64_t ino) {
  inodes_.insert({dev, ino});
  inos_.insert(ino);
}

bool MaskSet::MatchesPath(std::string_view rel) const {
  if (rel.empty() || patterns_.empty()) return false;
  std::vector<std::string_view> comps = SplitPath(rel);
  for (const auto& pattern : patterns_) {
    // A pattern matches rel or an ancestor of it when its components match a prefix of
    // rel's components one by one (FNM_PATHNAME semantics, '*' never crosses '/').
    if (pattern.size() > comps.size()) continue;
    bool all = true;
    for (size_t i = 0; i < pattern.size() && all; ++i) {
      all = fnmatch(pattern[i].c_str(), std::string(comps[i]).c_str(), 0) == 0;
    }
    if (all) return true;
  }
  return false;
}

bool MaskSet::IsAncestorOfMask(std::string_view rel) const {
  std::vector<std::string_view> comps = SplitPath(rel);
  for (const auto& pattern : patterns_) {
    if (pattern.size() <= comps.size()) continue;
    bool all = true;
    for (size_t i = 0; i < comps.size() && all; ++i) {
      all = fnmatch(pattern[i].c_str(), std::string(comps[i]).c_str(), 0) == 0;
    }
    if (all) return true;
  }
  return false;
}

}  // namespace usentry::gofer
