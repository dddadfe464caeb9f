// One-line reports shared by the attack programs: "name=OK <detail>" when a call
// succeeded, "name=ENAME" when it failed, so the test can assert on each attempt.
#ifndef USENTRY_TESTS_HOSTILE_REPORT_H_
#define USENTRY_TESTS_HOSTILE_REPORT_H_

// Built with _GNU_SOURCE (CMake) for strerrorname_np.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// Reports the outcome of a call that returns -1 and sets errno on failure. Flushes
// at once: a later attack may kill the process, and earlier lines must survive it.
static inline long Report(const char* name, long rc) {
  if (rc < 0) {
    const char* e = strerrorname_np(errno);
    printf("%s=%s\n", name, e != NULL ? e : "E?");
  } else {
    printf("%s=OK %ld\n", name, rc);
  }
  fflush(stdout);
  return rc;
}

// Formats a report name ("open:/x") into a static buffer; one use per statement.
static inline const char* Name(const char* fmt, ...) {
  static char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

#endif  // USENTRY_TESTS_HOSTILE_REPORT_H_
