// SIGPIPE for writes to a pipe (or host pipe) without readers; separate from pipe.cc so
// that pipe unit tests need not link the signal code.
#include <signal.h>

#include <cstring>

#include "sentry/fsimpl/pipe.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/signal/deliver.h"

namespace usentry::sentry::fsimpl {

void SendSigpipe(Task& task) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = SIGPIPE;
  info.si_code = SI_USER;  // send_sig(..., 0): the writer "sent" it to itself
  info.si_pid = task.thread_group().pid();
  info.si_uid = task.creds().ruid;
  SendTaskSignal(task, info);
}

}  // namespace usentry::sentry::fsimpl
