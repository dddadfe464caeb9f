// Netlink message building and attribute parsing.
#include "sentry/net/netlink_message.h"

#include <algorithm>
#include <cstddef>

namespace usentry::sentry::net {

NlMessageBuilder::NlMessageBuilder(uint16_t type, uint16_t flags, uint32_t seq, uint32_t portid) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  h.nlmsg_pid = portid;
  PutRaw(&h, sizeof(h));
}

void NlMessageBuilder::PutRaw(const void* data, size_t len) {
  buf_.append(static_cast<const char*>(data), len);
  buf_.append(NlAlign(len) - len, '\0');
}

void NlMessageBuilder::PutAttr(uint16_t type, const void* data, size_t len) {
  nlattr a{};
  a.nla_len = static_cast<uint16_t>(kNlAttrHdrLen + len);
  a.nla_type = type;
  PutRaw(&a, sizeof(a));
  PutRaw(data, len);
}

void NlMessageBuilder::PutString(uint16_t type, std::string_view s) {
  std::string z(s);
  PutAttr(type, z.c_str(), z.size() + 1);
}

size_t NlMessageBuilder::BeginNested(uint16_t type) {
  size_t off = buf_.size();
  nlattr a{};
  a.nla_type = type | NLA_F_NESTED;
  PutRaw(&a, sizeof(a));
  return off;
}

void NlMessageBuilder::EndNested(size_t offset) {
  uint16_t len = static_cast<uint16_t>(buf_.size() - offset);
  memcpy(buf_.data() + offset + offsetof(nlattr, nla_len), &len, sizeof(len));
}

std::string NlMessageBuilder::Finish() && {
  uint32_t len = static_cast<uint32_t>(buf_.size());
  memcpy(buf_.data() + offsetof(nlmsghdr, nlmsg_len), &len, sizeof(len));
  return std::move(buf_);
}

std::map<uint16_t, std::string_view> ParseNlAttrs(std::string_view payload, size_t hdrlen) {
  std::map<uint16_t, std::string_view> out;
  size_t off = NlAlign(hdrlen);
  while (off + sizeof(nlattr) <= payload.size()) {
    nlattr a;
    memcpy(&a, payload.data() + off, sizeof(a));
    if (a.nla_len < sizeof(nlattr) || a.nla_len > payload.size() - off) break;
    out[a.nla_type & NLA_TYPE_MASK] =
        payload.substr(off + kNlAttrHdrLen, a.nla_len - std::min<size_t>(a.nla_len, kNlAttrHdrLen));
    off += NlAlign(a.nla_len);
  }
  return out;
}

std::string NlErrorMessage(const nlmsghdr& request, std::string_view request_bytes, int error,
                           uint32_t portid, bool cap) {
  // Linux echoes the whole failed request unless NETLINK_CAP_ACK, and only its header
  // for a plain ACK; NLM_F_CAPPED says which.
  const bool whole = error != 0 && !cap;
  NlMessageBuilder b(NLMSG_ERROR, whole ? 0 : NLM_F_CAPPED, request.nlmsg_seq, portid);
  b.PutRaw(&error, sizeof(error));
  if (whole) {
    b.PutRaw(request_bytes.data(), request_bytes.size());
  } else {
    b.PutRaw(&request, sizeof(request));
  }
  return std::move(b).Finish();
}

std::string NlDoneMessage(uint32_t seq, uint32_t portid, int status) {
  NlMessageBuilder b(NLMSG_DONE, NLM_F_MULTI, seq, portid);
  b.PutRaw(&status, sizeof(status));
  return std::move(b).Finish();
}

std::string NextDumpBatch(std::deque<std::string>& pending, std::string& done, size_t cap) {
  std::string batch;
  while (!pending.empty() && (batch.empty() || batch.size() + pending.front().size() <= cap)) {
    batch += pending.front();
    pending.pop_front();
  }
  if (pending.empty() && batch.size() + done.size() <= cap) {
    batch += done;
    done.clear();
  }
  return batch;
}

}  // namespace usentry::sentry::net
