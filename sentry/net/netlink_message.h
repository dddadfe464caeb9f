// Netlink message codec: building replies (nlmsghdr, a family header, rtattr TLVs with
// Linux's 4-byte alignment) and reading the attributes of requests. Works on sentry
// buffers only (the socket copies app memory in and out); no kernel dependencies.
#ifndef USENTRY_SENTRY_NET_NETLINK_MESSAGE_H_
#define USENTRY_SENTRY_NET_NETLINK_MESSAGE_H_

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <string_view>

namespace usentry::sentry::net {

inline constexpr size_t NlAlign(size_t n) { return (n + 3) & ~size_t{3}; }
inline constexpr size_t kNlHdrLen = NlAlign(sizeof(nlmsghdr));
inline constexpr size_t kNlAttrHdrLen = NlAlign(sizeof(nlattr));

// One message under construction. Every Put keeps the 4-byte alignment, so Finish() is
// the message as Linux's nlmsg_put/nla_put would have laid it out.
class NlMessageBuilder {
 public:
  NlMessageBuilder(uint16_t type, uint16_t flags, uint32_t seq, uint32_t portid);

  // The fixed family header after nlmsghdr (ifinfomsg, ifaddrmsg, rtmsg, nlmsgerr...).
  template <typename T>
  void PutHeader(const T& h) {
    PutRaw(&h, sizeof(h));
  }
  void PutRaw(const void* data, size_t len);
  void PutAttr(uint16_t type, const void* data, size_t len);
  template <typename T>
  void PutAttr(uint16_t type, const T& v) {
    PutAttr(type, &v, sizeof(v));
  }
  // NUL-terminated, as nla_put_string.
  void PutString(uint16_t type, std::string_view s);
  // A nested attribute: Begin returns its offset, End fixes its length.
  size_t BeginNested(uint16_t type);
  void EndNested(size_t offset);

  size_t size() const { return buf_.size(); }
  // The message with nlmsg_len set (already a multiple of 4).
  std::string Finish() &&;

 private:
  std::string buf_;
};

// The attributes following a request's family header of `hdrlen` bytes (NLA_TYPE_MASK
// applied to the types; a later duplicate replaces an earlier one, as nla_parse). A
// truncated attribute ends the list.
std::map<uint16_t, std::string_view> ParseNlAttrs(std::string_view payload, size_t hdrlen);

// The family header of a request, zero-filled when the payload is shorter (Linux's
// legacy requests carry only an rtgenmsg).
template <typename T>
T NlFamilyHeader(std::string_view payload) {
  T h{};
  memcpy(&h, payload.data(), payload.size() < sizeof(T) ? payload.size() : sizeof(T));
  return h;
}

// NLMSG_ERROR for `request` (its header, and unless `cap` its whole body, as
// netlink_ack copies it) with `error` (0 = ACK, else a negative errno). `portid` is the
// requester's, which every reply carries.
std::string NlErrorMessage(const nlmsghdr& request, std::string_view request_bytes, int error,
                           uint32_t portid, bool cap);
// NLMSG_DONE ending a dump, with the dump's status (0 or a negative errno).
std::string NlDoneMessage(uint32_t seq, uint32_t portid, int status);

// The next datagram of a dump: as many whole messages of `pending` as fit in `cap` (at
// least one), then `done` — moved out, leaving it empty — once nothing else is pending
// and it fits too. Like Linux's netlink_dump, NLMSG_DONE shares the last batch when there
// is room, else comes alone in the next one.
std::string NextDumpBatch(std::deque<std::string>& pending, std::string& done, size_t cap);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_NETLINK_MESSAGE_H_
