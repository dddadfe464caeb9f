// BounceBuffer: a 128 KiB scratch buffer for moving file data into app memory with
// pwrite (see FillFromFile and sys_read_write.cc), taken from a pool shared by all
// sentry threads. A thread-local buffer per task thread cost ~32 first-touch page faults
// (~15 us each on the test VM) for every new process; pooled buffers stay resident.
#ifndef USENTRY_SENTRY_MM_BOUNCE_BUFFER_H_
#define USENTRY_SENTRY_MM_BOUNCE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace usentry::sentry::mm {

class BounceBuffer {
 public:
  static constexpr size_t kSize = 128 << 10;
  BounceBuffer();   // takes a buffer from the pool (or allocates one)
  ~BounceBuffer();  // gives it back
  BounceBuffer(const BounceBuffer&) = delete;
  BounceBuffer& operator=(const BounceBuffer&) = delete;
  uint8_t* data() const { return buf_.get(); }

 private:
  std::unique_ptr<uint8_t[]> buf_;
};

}  // namespace usentry::sentry::mm

#endif  // USENTRY_SENTRY_MM_BOUNCE_BUFFER_H_
