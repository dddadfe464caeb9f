// Epoll item lifetimes without a task: items leave with their description, queues
// destroyed before the items, epolls destroyed before the files they watch, nesting.
#include "sentry/fsimpl/epoll.h"

#include <fcntl.h>
#include <poll.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fsimpl/eventfd.h"
#include "sentry/fsimpl/pipe.h"

namespace usentry::sentry::fsimpl {
namespace {

void WriteStr(vfs::FileDescription& f, const std::string& s) {
  iovec v{const_cast<char*>(s.data()), s.size()};
  ASSERT_TRUE(f.Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
}

void WriteCount(vfs::FileDescription& f, uint64_t n) {
  iovec v{&n, sizeof(n)};
  ASSERT_TRUE(f.Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
}

EpollEvent Ev(uint32_t events, uint64_t data) { return EpollEvent{events, data}; }

// A callback waiter counting what it was told.
class CountingWaiter : public Waiter {
 public:
  CountingWaiter() : Waiter(nullptr) {}
  void Notify(EventMask events) override {
    ++calls;
    last = events;
  }
  void QueueDestroyed(WaitQueue*) override { queue_gone = true; }
  int calls = 0;
  EventMask last = 0;
  bool queue_gone = false;
};

TEST(WaitQueueCallbackTest, NotifyPassesTheMatchedBitsAndDestructionIsReported) {
  CountingWaiter w;
  {
    WaitQueue q;
    q.Add(&w, POLLIN | POLLHUP);
    q.Notify(POLLOUT);
    EXPECT_EQ(w.calls, 0);
    q.Notify(POLLIN | POLLOUT);
    EXPECT_EQ(w.calls, 1);
    EXPECT_EQ(w.last, static_cast<EventMask>(POLLIN));
  }
  EXPECT_TRUE(w.queue_gone);
}

TEST(EpollTest, ReleasedDescriptionLeavesItsItemAndQueue) {
  auto ep = std::make_shared<EpollDescription>(0);
  PipeEnds p = NewPipe(0);
  ASSERT_TRUE(ep->Add(p.read, 3, Ev(POLLIN, 1)).ok());
  ASSERT_TRUE(ep->Add(p.write, 4, Ev(POLLOUT, 2)).ok());
  EXPECT_EQ(ep->Collect(8).size(), 1u);  // the write end
  WaitQueue* pipe_queue = p.read->wait_queue();
  p.read.reset();                     // the pipe (and its queue) lives on through the write end
  EXPECT_FALSE(pipe_queue->empty());  // the write end's item only
  ASSERT_TRUE(ep->Delete(p.write.get(), 4).ok());
  EXPECT_TRUE(pipe_queue->empty());
  EXPECT_TRUE(ep->Collect(8).empty());
}

TEST(EpollTest, QueueOwnedByTheDescriptionGoesFirst) {
  auto ep = std::make_shared<EpollDescription>(0);
  auto efd = std::make_shared<EventfdDescription>(1, O_NONBLOCK, false);
  ASSERT_TRUE(ep->Add(efd, 5, Ev(POLLIN, 9)).ok());
  ASSERT_EQ(ep->Readiness(POLLIN), static_cast<EventMask>(POLLIN));
  efd.reset();  // destroys the eventfd's queue, then releases the description
  EXPECT_EQ(ep->Readiness(POLLIN), 0u);
  EXPECT_TRUE(ep->Collect(8).empty());
}

TEST(EpollTest, EpollDestroyedBeforeTheFilesItWatches) {
  PipeEnds p = NewPipe(0);
  {
    auto ep = std::make_shared<EpollDescription>(0);
    ASSERT_TRUE(ep->Add(p.read, 3, Ev(POLLIN | kEpollEt, 1)).ok());
  }
  EXPECT_TRUE(p.read->wait_queue()->empty());
  WriteStr(*p.write, "x");  // notifies nobody
}

TEST(EpollTest, NestedEpollReleasedWhileWatched) {
  auto outer = std::make_shared<EpollDescription>(0);
  auto inner = std::make_shared<EpollDescription>(0);
  auto efd = std::make_shared<EventfdDescription>(0, O_NONBLOCK, false);
  ASSERT_TRUE(inner->Add(efd, 3, Ev(POLLIN, 1)).ok());
  ASSERT_TRUE(outer->Add(inner, 4, Ev(POLLIN, 2)).ok());
  EXPECT_EQ(outer->Add(inner, 4, Ev(POLLIN, 2)).error(), EEXIST);
  EXPECT_EQ(inner->Add(outer, 5, Ev(POLLIN, 2)).error(), ELOOP);
  WriteCount(*efd, 1);
  auto evs = outer->Collect(8);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].data, 2u);
  inner.reset();
  EXPECT_TRUE(outer->Collect(8).empty());
  EXPECT_TRUE(efd->wait_queue()->empty());
}

TEST(EpollTest, ChainsLongerThanTheLimitAreEloopGrowingEitherWay) {
  // Bottom-up: chain[i] watches chain[i-1].
  std::vector<std::shared_ptr<EpollDescription>> up{std::make_shared<EpollDescription>(0)};
  for (int i = 1; i <= kEpollMaxNests; ++i) {
    up.push_back(std::make_shared<EpollDescription>(0));
    ASSERT_TRUE(up[i]->Add(up[i - 1], i, Ev(POLLIN, 0)).ok()) << i;
  }
  auto top = std::make_shared<EpollDescription>(0);
  EXPECT_EQ(top->Add(up.back(), 1, Ev(POLLIN, 0)).error(), ELOOP);
  // Top-down: chain[i-1] watches chain[i].
  std::vector<std::shared_ptr<EpollDescription>> down{std::make_shared<EpollDescription>(0)};
  for (int i = 1; i <= kEpollMaxNests; ++i) {
    down.push_back(std::make_shared<EpollDescription>(0));
    ASSERT_TRUE(down[i - 1]->Add(down[i], i, Ev(POLLIN, 0)).ok()) << i;
  }
  auto bottom = std::make_shared<EpollDescription>(0);
  EXPECT_EQ(down.back()->Add(bottom, 1, Ev(POLLIN, 0)).error(), ELOOP);
  // Releasing the head of the chain shortens it.
  down.front().reset();
  EXPECT_TRUE(down.back()->Add(bottom, 1, Ev(POLLIN, 0)).ok());
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
