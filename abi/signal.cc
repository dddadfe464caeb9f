// Signal names, as strace and the audit record print them.
#include "abi/signal.h"

namespace usentry::abi {
namespace {

constexpr const char* kSignalNames[kNumSignals + 1] = {
    nullptr,       "SIGHUP",      "SIGINT",      "SIGQUIT",     "SIGILL",      "SIGTRAP",
    "SIGABRT",     "SIGBUS",      "SIGFPE",      "SIGKILL",     "SIGUSR1",     "SIGSEGV",
    "SIGUSR2",     "SIGPIPE",     "SIGALRM",     "SIGTERM",     "SIGSTKFLT",   "SIGCHLD",
    "SIGCONT",     "SIGSTOP",     "SIGTSTP",     "SIGTTIN",     "SIGTTOU",     "SIGURG",
    "SIGXCPU",     "SIGXFSZ",     "SIGVTALRM",   "SIGPROF",     "SIGWINCH",    "SIGIO",
    "SIGPWR",      "SIGSYS",      "SIGRTMIN",    "SIGRTMIN+1",  "SIGRTMIN+2",  "SIGRTMIN+3",
    "SIGRTMIN+4",  "SIGRTMIN+5",  "SIGRTMIN+6",  "SIGRTMIN+7",  "SIGRTMIN+8",  "SIGRTMIN+9",
    "SIGRTMIN+10", "SIGRTMIN+11", "SIGRTMIN+12", "SIGRTMIN+13", "SIGRTMIN+14", "SIGRTMIN+15",
    "SIGRTMIN+16", "SIGRTMIN+17", "SIGRTMIN+18", "SIGRTMIN+19", "SIGRTMIN+20", "SIGRTMIN+21",
    "SIGRTMIN+22", "SIGRTMIN+23", "SIGRTMIN+24", "SIGRTMIN+25", "SIGRTMIN+26", "SIGRTMIN+27",
    "SIGRTMIN+28", "SIGRTMIN+29", "SIGRTMIN+30", "SIGRTMIN+31", "SIGRTMAX",
};
static_assert(kSignalNames[kNumSignals] != nullptr, "one name per signal");

}  // namespace

const char* SignalName(int sig) {
  if (sig < 1 || sig > kNumSignals) return nullptr;
  return kSignalNames[sig];
}

}  // namespace usentry::abi
