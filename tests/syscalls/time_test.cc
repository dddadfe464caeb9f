// Clocks and sleeps: clock_gettime/getres, clock_settime's refusals, nanosleep and
// clock_nanosleep argument checks. Nothing here may set a clock: natively these run as
// root, so only calls Linux rejects before its permission check are made.
#include <sys/time.h>
#include <time.h>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

int64_t Ns(const timespec& ts) { return ts.tv_sec * 1000000000ll + ts.tv_nsec; }

TEST(ClockGettime, MonotonicNeverGoesBack) {
  timespec a{}, b{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &a));
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &b));
  EXPECT_LE(Ns(a), Ns(b));
}

TEST(ClockGettime, RealtimeAgreesWithGettimeofday) {
  timespec ts{};
  timeval tv{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_REALTIME, &ts));
  ASSERT_SYS_OK(gettimeofday(&tv, nullptr));
  EXPECT_LT(std::llabs(tv.tv_sec - ts.tv_sec), 2);
}

TEST(ClockGettime, UnknownClockIsEinval) {
  timespec ts{};
  EXPECT_ERRNO(clock_gettime(1234, &ts), EINVAL);
  EXPECT_ERRNO(clock_getres(1234, &ts), EINVAL);
}

TEST(ClockGetres, MonotonicIsAtMostAMillisecond) {
  timespec res{};
  ASSERT_SYS_OK(clock_getres(CLOCK_MONOTONIC, &res));
  EXPECT_EQ(res.tv_sec, 0);
  EXPECT_LE(res.tv_nsec, 1000000);
}

TEST(ClockSettime, MonotonicIsNotSettable) {
  timespec ts{1, 0};
  EXPECT_ERRNO(clock_settime(CLOCK_MONOTONIC, &ts), EINVAL);
}

TEST(ClockSettime, BadNanosecondsAreEinval) {
  timespec ts{1, 1000000000};
  EXPECT_ERRNO(clock_settime(CLOCK_REALTIME, &ts), EINVAL);
}

TEST(Nanosleep, BadTimespecIsEinval) {
  timespec bad{0, -1};
  EXPECT_ERRNO(nanosleep(&bad, nullptr), EINVAL);
}

TEST(ClockNanosleep, AbsoluteDeadlineInThePastReturnsAtOnce) {
  timespec now{};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &now));
  now.tv_sec -= 10;
  EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, nullptr), 0);
}

TEST(ClockNanosleep, RelativeSleepLastsAtLeastItsTime) {
  timespec a{}, b{};
  timespec req{0, 20 * 1000 * 1000};
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &a));
  EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &req, nullptr), 0);
  ASSERT_SYS_OK(clock_gettime(CLOCK_MONOTONIC, &b));
  EXPECT_GE(Ns(b) - Ns(a), 20 * 1000 * 1000);
}

TEST(ClockNanosleep, ThreadCpuClockIsEinval) {
  timespec req{0, 1000};
  EXPECT_EQ(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &req, nullptr), EINVAL);
}

}  // namespace
}  // namespace syscall_test
