// DNS messages for the sandbox resolver: parsing the app's queries (untrusted, every
// byte) and building the responses the sentry sends back (RFC 1035, EDNS0 from RFC
// 6891). Only what a stub resolver sends and needs: one question, answers of type A,
// AAAA, CNAME and PTR. Plain data, no I/O, no sentry kernel dependencies: netgate and
// tests link it too. Names are in the text form described in dns_name.h.
//
// Truncation: a response that does not fit the requester's size loses answers from the
// end until it fits, and TC is *not* set. TC asks the client to retry over TCP, and the
// sandbox resolver has no TCP service; a client that got TC would either fail or retry
// forever, while a shorter answer set is still a correct (if incomplete) answer.
#ifndef USENTRY_SENTRY_NET_DNS_MESSAGE_H_
#define USENTRY_SENTRY_NET_DNS_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/ip_address.h"

namespace usentry::sentry::net::dns {

inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeCname = 5;
inline constexpr uint16_t kTypePtr = 12;
inline constexpr uint16_t kTypeAaaa = 28;
inline constexpr uint16_t kTypeOpt = 41;
inline constexpr uint16_t kTypeAny = 255;
inline constexpr uint16_t kClassIn = 1;

// Sizes of a UDP response: 512 without EDNS (RFC 1035); with EDNS the requester's
// payload size, clamped to this range (below 512 means 512, RFC 6891 6.2.5; above 4096
// would only invite IP fragmentation).
inline constexpr size_t kMinUdpSize = 512;
inline constexpr size_t kMaxUdpSize = 4096;

// Response codes; values above 15 exist only with EDNS (the upper 8 bits go in OPT).
enum class Rcode : uint16_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
  kBadVers = 16,
};

struct Edns {
  uint16_t udp_size = kMinUdpSize;  // requester's payload size, clamped as above
  uint8_t version = 0;
  bool dnssec_ok = false;  // DO bit: kept for logs; the sandbox resolver never signs
};

struct Question {
  std::string name;       // text form: lowercase, no trailing dot, "" is the root
  std::string wire_name;  // the same, uncompressed wire form (echoed in the response;
                          // when empty, BuildResponse encodes `name`)
  uint16_t type = 0;
  uint16_t qclass = 0;
  bool is_hostname = false;  // IsValidHostname(name); the policy decides what to do
};

struct Query {
  uint16_t id = 0;
  uint8_t opcode = 0;
  bool rd = false;
  std::optional<Question> question;  // absent in error results (FORMERR, NOTIMP)
  std::optional<Edns> edns;
};

enum class ParseStatus {
  kOk,           // `query` is a complete standard query
  kAnswerError,  // answer with `rcode`; `query` has the header (id, opcode, rd) only,
                 // plus `edns` for kBadVers
  kDrop,         // send nothing: shorter than a header, or QR=1 (a response, not a query)
};

struct ParseResult {
  ParseStatus status = ParseStatus::kDrop;
  Rcode rcode = Rcode::kNoError;
  Query query;
  const char* reason = "";  // why it is not kOk, for logs (static string)
};

// Parses one UDP datagram sent to the sandbox resolver. Accepts exactly: QR=0, OPCODE=0
// (else NOTIMP), QDCOUNT=1, ANCOUNT=0, NSCOUNT=0, ARCOUNT=0 or one OPT record with an
// empty owner name and well-formed options (version 0, else BADVERS), nothing after
// the last record. Anything else with a readable header is FORMERR. Never reads past
// `datagram`, whatever it holds.
[[nodiscard]] ParseResult ParseQuery(absl::string_view datagram);

// One answer record. Build them with the helpers below.
struct ResourceRecord {
  std::string name;    // owner, text form; "" means the question's name
  uint16_t type = 0;   // kTypeA, kTypeAaaa, kTypeCname or kTypePtr
  uint32_t ttl = 0;    // seconds; sent as at most 2^31-1 (RFC 2181 8)
  IpAddress address;   // kTypeA (IPv4) / kTypeAaaa (IPv6)
  std::string target;  // kTypeCname / kTypePtr: a name in text form

  // A for an IPv4 address, AAAA for IPv6 (v4-mapped addresses are sent as AAAA).
  static ResourceRecord Address(std::string name, const IpAddress& ip, uint32_t ttl);
  static ResourceRecord Cname(std::string name, std::string target, uint32_t ttl);
  static ResourceRecord Ptr(std::string name, std::string target, uint32_t ttl);
};

// The largest response `query`'s sender accepts over UDP: 512, or its EDNS size.
[[nodiscard]] size_t MaxResponseSize(const Query& query);

// A response to `query` (a kOk or kAnswerError result of ParseQuery): QR=1, the query's
// id, opcode and RD, RA=1, AA=0, TC=0, `rcode`; the question echoed when the query had
// one; `answers` in order, owner names and CNAME/PTR targets compressed; an OPT record
// (version 0, our kMaxUdpSize) when the query had one. Answers that do not fit in
// `max_size` (at least kMinUdpSize is always allowed) are dropped from the end, TC stays
// clear (see the top of this file). Answers that cannot be encoded (a name that is not
// a valid text name, an address of the wrong family, another type) are skipped: names
// may come from upstream, which is untrusted too. An rcode above 15 without EDNS is
// sent as SERVFAIL.
[[nodiscard]] std::string BuildResponse(const Query& query, Rcode rcode,
                                        absl::Span<const ResourceRecord> answers, size_t max_size);

}  // namespace usentry::sentry::net::dns

#endif  // USENTRY_SENTRY_NET_DNS_MESSAGE_H_
