"""Runs one CPython regression-test module and prints one line per test case.

Used by compare.py on the host and inside the sandbox, so both sides load and run the
module the same way. Output lines: "CASE <outcome> <test id>" with outcome one of pass,
fail, error, skip, xfail, xpass; then "DETAIL <test id> <first line of the error>".
Network resources are never enabled (use_resources = []), so natively no test reaches
the internet; inside the sandbox there is no network anyway.
"""
import os
import socket
import sys
import unittest

from test import support
from test.support import os_helper


class Recording(unittest.TextTestResult):
    """Prints each case's outcome as soon as it is known, so a module that hangs or is
    killed at the timeout still reports the cases it finished."""

    out = None  # our own copy of stdout, set by main()

    def _note(self, test, outcome, err=None):
        detail = ""
        if err is not None:
            lines = self._exc_info_to_string(err, test).strip().splitlines()
            detail = lines[-1] if lines else ""
        self._emit(test.id(), outcome, detail)

    def _emit(self, case_id, outcome, detail):
        self.out.write(f"CASE {outcome} {case_id}\n")
        if detail and outcome in ("fail", "error"):
            self.out.write(f"DETAIL {case_id} {detail[:200]}\n")
        self.out.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, "fail", err)

    def addError(self, test, err):
        super().addError(test, err)
        self._note(test, "error", err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._emit(test.id(), "skip", "")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._note(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._note(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            outcome = "fail" if issubclass(err[0], test.failureException) else "error"
            self._note(subtest, outcome, err)


def main():
    name = sys.argv[1]
    support.use_resources = []
    support.verbose = False
    # AF_VSOCK reaches the hypervisor, not another process of this machine: the sandbox
    # has none, and natively on a VM with /dev/vsock test_socket's VSOCK cases hang in
    # accept(). Without the ioctl's name test_socket finds no CID and skips them, on
    # both sides alike.
    if hasattr(socket, "IOCTL_VM_SOCKETS_GET_LOCAL_CID"):
        del socket.IOCTL_VM_SOCKETS_GET_LOCAL_CID
    # Keep our own copy of stdout: some tests replace or close sys.stdout.
    Recording.out = os.fdopen(os.dup(1), "w")
    suite = unittest.defaultTestLoader.loadTestsFromName("test." + name)
    with open(os.devnull, "w") as sink:
        runner = unittest.TextTestRunner(stream=sink, resultclass=Recording, verbosity=0)
        with os_helper.temp_cwd(None):
            runner.run(suite)


if __name__ == "__main__":
    main()
