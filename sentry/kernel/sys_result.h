// The sentry's syscall-domain result type lives in base/ (the gofer client shares it);
// code in usentry::sentry uses SysResult / Errno / SysStatus unqualified.
#ifndef USENTRY_SENTRY_KERNEL_SYS_RESULT_H_
#define USENTRY_SENTRY_KERNEL_SYS_RESULT_H_
#include "base/sys_result.h"
#endif  // USENTRY_SENTRY_KERNEL_SYS_RESULT_H_
