#include "sentry/net/dns_message.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "sentry/net/dns_name.h"

namespace usentry::sentry::net::dns {
namespace {

// Header flag bits (RFC 1035 4.1.1) in the 16-bit flags word.
constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;
constexpr int kOpcodeShift = 11;
constexpr size_t kOptRecordSize = 11;  // root name, type, class, ttl, rdlength 0
constexpr uint16_t kMaxPointerOffset = 0x3FFF;

uint16_t Get16(absl::string_view b, size_t pos) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[pos]) << 8 |
                               static_cast<unsigned char>(b[pos + 1]));
}

ParseResult Error(Query header, Rcode rcode, const char* reason) {
  ParseResult r;
  r.status = ParseStatus::kAnswerError;
  r.rcode = rcode;
  r.query = std::move(header);
  r.reason = reason;
  return r;
}

// Parses the OPT record at `pos` (the only additional record a query may carry) into
// `edns` and returns the offset after it, or nullopt when it is malformed.
std::optional<size_t> ParseOpt(absl::string_view msg, size_t pos, Edns& edns) {
  // Owner name: the root, one zero byte (RFC 6891 6.1.2); no pointer either.
  constexpr size_t kFixed = 1 + 2 + 2 + 4 + 2;
  if (msg.size() - pos < kFixed || msg[pos] != '\0') return std::nullopt;
  if (Get16(msg, pos + 1) != kTypeOpt) return std::nullopt;
  const uint16_t udp_size = Get16(msg, pos + 3);
  edns.udp_size = static_cast<uint16_t>(std::clamp<size_t>(udp_size, kMinUdpSize, kMaxUdpSize));
  edns.version = static_cast<uint8_t>(msg[pos + 6]);
  edns.dnssec_ok = (static_cast<unsigned char>(msg[pos + 7]) & 0x80) != 0;
  const uint16_t rdlength = Get16(msg, pos + 9);
  pos += kFixed;
  if (msg.size() - pos < rdlength) return std::nullopt;
  // Options: code, length, data; they must tile the rdata exactly.
  const size_t end = pos + rdlength;
  while (pos < end) {
    if (end - pos < 4) return std::nullopt;
    const uint16_t len = Get16(msg, pos + 2);
    pos += 4;
    if (end - pos < len) return std::nullopt;
    pos += len;
  }
  return end;
}

// Appends to a response and compresses names against the ones already in it.
class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) {
    U8(static_cast<uint8_t>(v >> 8));
    U8(static_cast<uint8_t>(v));
  }
  void U32(uint32_t v) {
    U16(static_cast<uint16_t>(v >> 16));
    U16(static_cast<uint16_t>(v));
  }
  void Bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void Put16(size_t pos, uint16_t v) {
    out_[pos] = static_cast<char>(v >> 8);
    out_[pos + 1] = static_cast<char>(v);
  }
  size_t size() const { return out_.size(); }

  // Writes the uncompressed wire name `wire`: its labels up to the longest suffix that
  // is already in the message, then a pointer to that suffix.
  void Name(absl::string_view wire) {
    std::vector<size_t> starts;  // offsets of the labels in `wire`
    for (size_t p = 0; p < wire.size() && wire[p] != '\0';
         p += 1 + static_cast<unsigned char>(wire[p])) {
      starts.push_back(p);
    }
    size_t i = 0;
    std::optional<uint16_t> pointer;
    for (; i < starts.size(); ++i) {
      pointer = Find(absl::AsciiStrToLower(wire.substr(starts[i])));
      if (pointer) break;
    }
    for (size_t k = 0; k < i; ++k) {
      if (out_.size() <= kMaxPointerOffset) {
        suffixes_.push_back(
            {absl::AsciiStrToLower(wire.substr(starts[k])), static_cast<uint16_t>(out_.size())});
      }
      const size_t len = 1 + static_cast<unsigned char>(wire[starts[k]]);
      out_.append(wire.data() + starts[k], len);
    }
    if (pointer) {
      U16(static_cast<uint16_t>(0xC000 | *pointer));
    } else {
      U8(0);
    }
  }

  // A point to go back to when a record does not fit.
  struct Mark {
    size_t bytes;
    size_t suffixes;
  };
  Mark mark() const { return {out_.size(), suffixes_.size()}; }
  void Rewind(Mark m) {
    out_.resize(m.bytes);
    suffixes_.resize(m.suffixes);
  }

  std::string Take() && { return std::move(out_); }

 private:
  std::optional<uint16_t> Find(const std::string& lower_suffix) const {
    for (const Suffix& s : suffixes_) {
      if (s.lower_wire == lower_suffix) return s.offset;
    }
    return std::nullopt;
  }

  struct Suffix {
    std::string lower_wire;  // a name's suffix, from a label to the root
    uint16_t offset;
  };
  std::string out_;
  std::vector<Suffix> suffixes_;
};

// Writes one answer record; false (and nothing written) when it cannot be encoded.
// `question_wire` is the question's name (empty: the response has no question).
bool WriteRecord(Writer& w, absl::string_view question_wire, const ResourceRecord& rr) {
  std::string owner;
  if (rr.name.empty()) {
    if (question_wire.empty()) return false;
    owner = std::string(question_wire);
  } else {
    std::optional<std::string> wire = TextToWire(rr.name);
    if (!wire) return false;
    owner = std::move(*wire);
  }
  std::string rdata_name;
  switch (rr.type) {
    case kTypeA:
      if (!rr.address.is_v4()) return false;
      break;
    case kTypeAaaa:
      if (!rr.address.is_v6()) return false;
      break;
    case kTypeCname:
    case kTypePtr: {
      std::optional<std::string> wire = TextToWire(rr.target);
      if (!wire) return false;
      rdata_name = std::move(*wire);
      break;
    }
    default:
      return false;
  }
  w.Name(owner);
  w.U16(rr.type);
  w.U16(kClassIn);
  w.U32(std::min<uint32_t>(rr.ttl, 0x7FFFFFFF));
  const size_t rdlength_pos = w.size();
  w.U16(0);
  if (rr.type == kTypeA || rr.type == kTypeAaaa) {
    w.Bytes(rr.address.bytes(), rr.address.size());
  } else {
    w.Name(rdata_name);
  }
  w.Put16(rdlength_pos, static_cast<uint16_t>(w.size() - rdlength_pos - 2));
  return true;
}

}  // namespace

ParseResult ParseQuery(absl::string_view msg) {
  ParseResult drop;
  drop.status = ParseStatus::kDrop;
  if (msg.size() < kHeaderSize) {
    drop.reason = "shorter than a DNS header";
    return drop;
  }
  Query header;
  header.id = Get16(msg, 0);
  const uint16_t flags = Get16(msg, 2);
  if (flags & kFlagQr) {
    drop.reason = "QR set (a response)";
    return drop;
  }
  header.opcode = static_cast<uint8_t>((flags >> kOpcodeShift) & 0xF);
  header.rd = (flags & kFlagRd) != 0;
  if (header.opcode != 0) return Error(header, Rcode::kNotImp, "opcode is not QUERY");
  const uint16_t qdcount = Get16(msg, 4);
  const uint16_t ancount = Get16(msg, 6);
  const uint16_t nscount = Get16(msg, 8);
  const uint16_t arcount = Get16(msg, 10);
  if (qdcount != 1) return Error(header, Rcode::kFormErr, "QDCOUNT is not 1");
  if (ancount != 0 || nscount != 0) {
    return Error(header, Rcode::kFormErr, "answer or authority records in a query");
  }
  if (arcount > 1) return Error(header, Rcode::kFormErr, "more than one additional record");

  std::optional<ParsedName> name = ReadName(msg, kHeaderSize);
  if (!name) return Error(header, Rcode::kFormErr, "malformed question name");
  size_t pos = name->next;
  if (msg.size() - pos < 4) return Error(header, Rcode::kFormErr, "question runs past the end");
  Question q;
  q.type = Get16(msg, pos);
  q.qclass = Get16(msg, pos + 2);
  pos += 4;
  q.is_hostname = IsValidHostname(name->text);
  q.name = std::move(name->text);
  q.wire_name = std::move(name->wire);

  if (arcount == 1) {
    Edns edns;
    std::optional<size_t> end = ParseOpt(msg, pos, edns);
    if (!end) return Error(header, Rcode::kFormErr, "additional record is not a valid OPT");
    pos = *end;
    if (edns.version != 0) {
      // RFC 6891 6.1.3: answer BADVERS with an OPT of the version we do speak.
      header.edns = edns;
      return Error(header, Rcode::kBadVers, "EDNS version is not 0");
    }
    header.edns = edns;
  }
  if (pos != msg.size()) return Error(header, Rcode::kFormErr, "bytes after the last record");

  ParseResult ok;
  ok.status = ParseStatus::kOk;
  ok.query = std::move(header);
  ok.query.question = std::move(q);
  return ok;
}

ResourceRecord ResourceRecord::Address(std::string name, const IpAddress& ip, uint32_t ttl) {
  ResourceRecord rr;
  rr.name = std::move(name);
  rr.type = ip.is_v4() ? kTypeA : kTypeAaaa;
  rr.ttl = ttl;
  rr.address = ip;
  return rr;
}

ResourceRecord ResourceRecord::Cname(std::string name, std::string target, uint32_t ttl) {
  ResourceRecord rr;
  rr.name = std::move(name);
  rr.type = kTypeCname;
  rr.ttl = ttl;
  rr.target = std::move(target);
  return rr;
}

ResourceRecord ResourceRecord::Ptr(std::string name, std::string target, uint32_t ttl) {
  ResourceRecord rr = Cname(std::move(name), std::move(target), ttl);
  rr.type = kTypePtr;
  return rr;
}

size_t MaxResponseSize(const Query& query) {
  return query.edns ? query.edns->udp_size : kMinUdpSize;
}

std::string BuildResponse(const Query& query, Rcode rcode, absl::Span<const ResourceRecord> answers,
                          size_t max_size) {
  auto code = static_cast<uint16_t>(rcode);
  if (code > 0xF && !query.edns) code = static_cast<uint16_t>(Rcode::kServFail);
  const Question* question = query.question ? &*query.question : nullptr;
  // A Question built by hand (not by ParseQuery) may carry only its text name; one
  // whose name cannot be encoded is left out.
  std::string question_wire;
  if (question) {
    question_wire = !question->wire_name.empty()
                        ? question->wire_name
                        : TextToWire(question->name).value_or(std::string());
    if (question_wire.empty()) question = nullptr;
  }

  Writer w;
  w.U16(query.id);
  w.U16(static_cast<uint16_t>(kFlagQr | (query.opcode & 0xF) << kOpcodeShift |
                              (query.rd ? kFlagRd : 0) | kFlagRa | (code & 0xF)));
  w.U16(question ? 1 : 0);
  const size_t ancount_pos = w.size();
  w.U16(0);  // ANCOUNT, patched below
  w.U16(0);  // NSCOUNT
  w.U16(query.edns ? 1 : 0);
  if (question) {
    w.Name(question_wire);
    w.U16(question->type);
    w.U16(question->qclass);
  }

  // Header, question (<= 259 bytes) and OPT always fit in kMinUdpSize.
  const size_t limit = std::max(max_size, kMinUdpSize) - (query.edns ? kOptRecordSize : 0);
  uint16_t ancount = 0;
  for (const ResourceRecord& rr : answers) {
    const Writer::Mark before = w.mark();
    if (!WriteRecord(w, question_wire, rr)) continue;
    if (w.size() > limit) {
      w.Rewind(before);
      break;
    }
    ++ancount;
  }
  w.Put16(ancount_pos, ancount);

  if (query.edns) {
    w.U8(0);  // root owner
    w.U16(kTypeOpt);
    w.U16(static_cast<uint16_t>(kMaxUdpSize));
    w.U8(static_cast<uint8_t>(code >> 4));  // extended rcode, upper 8 bits
    w.U8(0);                                // version
    w.U16(0);                               // DO and Z
    w.U16(0);                               // no options
  }
  return std::move(w).Take();
}

}  // namespace usentry::sentry::net::dns
