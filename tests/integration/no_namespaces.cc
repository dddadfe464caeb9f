// no_namespaces PROGRAM ARGS...: runs PROGRAM as inside an unprivileged container whose
// seccomp profile (like Docker's default) refuses to create namespaces: clone/unshare
// with any CLONE_NEW* flag and setns fail with EPERM, clone3 with ENOSYS (so that glibc
// falls back to clone, whose flags a filter can see). Test helper for the fallback of
// `usentry run` on such hosts (cli_test.cc).
#include <sched.h>
#include <seccomp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <initializer_list>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: no_namespaces PROGRAM ARGS...\n");
    return 2;
  }
  constexpr unsigned long kNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                        CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return 3;
  // A rule per flag: libseccomp has no "masked != 0" test, so each bit is its own rule.
  for (unsigned long bit = 1; bit != 0; bit <<= 1) {
    if (!(kNamespaces & bit)) continue;
    for (int nr : {SCMP_SYS(clone), SCMP_SYS(unshare)}) {
      int arg = 0;  // the flags: clone's first argument, unshare's only one
      if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                           SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, bit, bit)) != 0) {
        return 4;
      }
    }
  }
  if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0) != 0 ||
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0 ||
      seccomp_load(ctx) != 0) {
    return 5;
  }
  seccomp_release(ctx);
  execv(argv[1], argv + 1);
  perror("no_namespaces: execv");
  return 127;
}
