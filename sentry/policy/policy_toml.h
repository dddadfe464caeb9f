// Loading a Policy from a TOML file (`usentry run --policy FILE`, `usentry policy check`).
// Errors are one line naming the file, the line and the key.
#ifndef USENTRY_SENTRY_POLICY_POLICY_TOML_H_
#define USENTRY_SENTRY_POLICY_POLICY_TOML_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sentry/policy/policy.h"

namespace usentry::policy {

// Parses `text` (named `source_name` in errors) over the defaults of Policy. Relative
// mount sources are taken relative to `base_dir` (the file's directory). The result is
// validated (Validate) except for what flags may still change: the caller validates again
// after applying flags.
absl::StatusOr<Policy> ParsePolicyToml(absl::string_view text, absl::string_view source_name,
                                       absl::string_view base_dir);

// Reads and parses the file at `path`.
absl::StatusOr<Policy> LoadPolicyFile(const std::string& path);

}  // namespace usentry::policy

#endif  // USENTRY_SENTRY_POLICY_POLICY_TOML_H_
