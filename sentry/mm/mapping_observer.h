// MappingObserver: something that must know how many VMAs map it, as Linux's vm_ops
// open/close tell a mapped object (and when one of them is msync'ed). SysV shared memory counts its
// attachments (shm_nattch) this way: a VMA split by munmap/mprotect or copied by fork counts once
// more, and every removal (munmap, shmdt, exec, exit, a MAP_FIXED mapping over it)
// counts once less.
//
// ObservedMapping is the member of a Vma that holds the observer: copying the Vma opens,
// destroying it closes, moving it does neither. Because every VMA copy in mm goes
// through the Vma copy constructor, the count stays exact without mm calling the
// observer by hand at each place. Calls happen under the kernel lock.
#ifndef USENTRY_SENTRY_MM_MAPPING_OBSERVER_H_
#define USENTRY_SENTRY_MM_MAPPING_OBSERVER_H_

#include <memory>
#include <utility>

namespace usentry::sentry::mm {

class MappingObserver {
 public:
  virtual void VmaOpened() = 0;
  virtual void VmaClosed() = 0;
  // msync of (part of) such a VMA: the object's chance to write stores back.
  virtual void Msync() {}

 protected:
  ~MappingObserver() = default;
};

class ObservedMapping {
 public:
  ObservedMapping() = default;
  explicit ObservedMapping(std::shared_ptr<MappingObserver> o) : o_(std::move(o)) {
    if (o_) o_->VmaOpened();
  }
  ObservedMapping(const ObservedMapping& other) : o_(other.o_) {
    if (o_) o_->VmaOpened();
  }
  ObservedMapping(ObservedMapping&& other) noexcept : o_(std::move(other.o_)) {}
  ObservedMapping& operator=(const ObservedMapping& other) {
    if (this != &other) *this = ObservedMapping(other);
    return *this;
  }
  ObservedMapping& operator=(ObservedMapping&& other) noexcept {
    if (this != &other) {
      reset();
      o_ = std::move(other.o_);
    }
    return *this;
  }
  ~ObservedMapping() { reset(); }

  // Closes (the VMA no longer maps the observed object).
  void reset() {
    // The observer may drop its last other reference in VmaClosed: keep it alive.
    if (std::shared_ptr<MappingObserver> o = std::move(o_)) o->VmaClosed();
  }
  MappingObserver* get() const { return o_.get(); }

 private:
  std::shared_ptr<MappingObserver> o_;
};

}  // namespace usentry::sentry::mm

#endif  // USENTRY_SENTRY_MM_MAPPING_OBSERVER_H_
