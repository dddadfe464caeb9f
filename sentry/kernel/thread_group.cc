// ThreadGroup helpers.
#include "sentry/kernel/thread_group.h"

namespace usentry::sentry {

int32_t ThreadGroup::ppid() const {
  std::shared_ptr<ThreadGroup> p = parent.lock();
  return p ? p->pid() : 0;
}

}  // namespace usentry::sentry
