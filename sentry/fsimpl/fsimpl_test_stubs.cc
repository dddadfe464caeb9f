// Link stubs for fsimpl unit tests that exercise descriptions with a null Task: the
// SIGPIPE path needs the signal code, which these tests do not link.
#include <cstdlib>

#include "sentry/fsimpl/pipe.h"

namespace usentry::sentry::fsimpl {

void SendSigpipe(Task&) { abort(); }  // tests never pass a task

}  // namespace usentry::sentry::fsimpl
