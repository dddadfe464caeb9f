// netgate protocol: JSON encoding and defensive decoding.
#include "sentry/net/netgate/protocol.h"

#include "nlohmann/json.hpp"

namespace usentry::netgate {
namespace {

using nlohmann::json;

// The value of `key` if `j` has it as an unsigned integer no larger than `max`.
std::optional<uint64_t> Unsigned(const json& j, const char* key, uint64_t max) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  uint64_t v = it->get<uint64_t>();
  if (v > max) return std::nullopt;
  return v;
}

std::optional<std::string> String(const json& j, const char* key, size_t max_len) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  std::string s = it->get<std::string>();
  if (s.size() > max_len) return std::nullopt;
  return s;
}

std::optional<IpAddress> Ip(const json& j, const char* key) {
  std::optional<std::string> s = String(j, key, 64);
  if (!s) return std::nullopt;
  return IpAddress::Parse(*s);
}

json Parse(std::string_view bytes) {
  return json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

std::string EncodeRequest(const Request& r) {
  json j;
  switch (r.op) {
    case Request::Op::kResolve:
      j = {{"op", "resolve"}, {"id", r.id}, {"name", r.name}, {"type", r.qtype}};
      break;
    case Request::Op::kConnect:
      j = {{"op", "connect"}, {"id", r.id}, {"proto", policy::NetProtoName(r.proto)}};
      if (r.host_port) {
        j["host_port"] = r.port;
      } else {
        j["ip"] = r.ip.ToString();
        j["port"] = r.port;
      }
      break;
    case Request::Op::kClose:
      j = {{"op", "close"}, {"conn", r.id}, {"bytes_in", r.bytes_in}, {"bytes_out", r.bytes_out}};
      break;
  }
  return j.dump();
}

std::optional<Request> DecodeRequest(std::string_view bytes) {
  json j = Parse(bytes);
  if (!j.is_object()) return std::nullopt;
  std::optional<std::string> op = String(j, "op", 16);
  if (!op) return std::nullopt;
  Request r;
  if (*op == "close") {
    auto conn = Unsigned(j, "conn", UINT64_MAX);
    auto in = Unsigned(j, "bytes_in", UINT64_MAX);
    auto out = Unsigned(j, "bytes_out", UINT64_MAX);
    if (!conn || !in || !out || j.size() != 4) return std::nullopt;
    r.op = Request::Op::kClose;
    r.id = *conn;
    r.bytes_in = *in;
    r.bytes_out = *out;
    return r;
  }
  auto id = Unsigned(j, "id", UINT64_MAX);
  if (!id) return std::nullopt;
  r.id = *id;
  if (*op == "resolve") {
    auto name = String(j, "name", 255);
    auto type = Unsigned(j, "type", 65535);
    if (!name || !type || (*type != kTypeA && *type != kTypeAAAA) || j.size() != 4) {
      return std::nullopt;
    }
    r.op = Request::Op::kResolve;
    r.name = *name;
    r.qtype = static_cast<uint16_t>(*type);
    return r;
  }
  if (*op == "connect") {
    auto proto = String(j, "proto", 8);
    if (!proto || (*proto != "tcp" && *proto != "udp")) return std::nullopt;
    r.op = Request::Op::kConnect;
    r.proto = *proto == "udp" ? policy::NetProto::kUdp : policy::NetProto::kTcp;
    if (j.contains("host_port")) {
      auto port = Unsigned(j, "host_port", 65535);
      if (!port || *port == 0 || j.size() != 4) return std::nullopt;
      r.host_port = true;
      r.port = static_cast<uint16_t>(*port);
      return r;
    }
    auto ip = Ip(j, "ip");
    auto port = Unsigned(j, "port", 65535);
    if (!ip || !port || *port == 0 || j.size() != 5) return std::nullopt;
    r.ip = *ip;
    r.port = static_cast<uint16_t>(*port);
    return r;
  }
  return std::nullopt;
}

std::string EncodeResolveReply(const ResolveReply& r) {
  json addrs = json::array(), blocked = json::array();
  for (const ResolvedAddress& a : r.addrs)
    addrs.push_back({{"ip", a.ip.ToString()}, {"ttl", a.ttl}});
  for (const BlockedAddress& b : r.blocked) {
    blocked.push_back({{"ip", b.ip.ToString()}, {"range", b.range}});
  }
  return json{{"id", r.id},
              {"rcode", r.rcode},
              {"addrs", addrs},
              {"blocked", blocked},
              {"reason", r.reason}}
      .dump();
}

std::string EncodeConnectReply(const ConnectReply& r) {
  return json{{"id", r.id},
              {"err", r.err},
              {"conn", r.conn},
              {"local_port", r.local_port},
              {"reason", r.reason}}
      .dump();
}

std::optional<Reply> DecodeReply(std::string_view bytes) {
  json j = Parse(bytes);
  if (!j.is_object()) return std::nullopt;
  auto id = Unsigned(j, "id", UINT64_MAX);
  auto reason = String(j, "reason", 4096);
  if (!id || !reason) return std::nullopt;
  Reply out;
  if (j.contains("rcode")) {
    auto rcode = Unsigned(j, "rcode", 15);
    auto addrs = j.find("addrs");
    auto blocked = j.find("blocked");
    if (!rcode || addrs == j.end() || !addrs->is_array() || blocked == j.end() ||
        !blocked->is_array()) {
      return std::nullopt;
    }
    out.is_resolve = true;
    ResolveReply& r = out.resolve;
    r.id = *id;
    r.rcode = static_cast<int>(*rcode);
    r.reason = *reason;
    for (const json& a : *addrs) {
      if (!a.is_object()) return std::nullopt;
      auto ip = Ip(a, "ip");
      auto ttl = Unsigned(a, "ttl", UINT32_MAX);
      if (!ip || !ttl) return std::nullopt;
      r.addrs.push_back({*ip, static_cast<uint32_t>(*ttl)});
    }
    for (const json& b : *blocked) {
      if (!b.is_object()) return std::nullopt;
      auto ip = Ip(b, "ip");
      auto range = String(b, "range", 256);
      if (!ip || !range) return std::nullopt;
      r.blocked.push_back({*ip, *range});
    }
    return out;
  }
  auto err = Unsigned(j, "err", 4095);
  auto conn = Unsigned(j, "conn", UINT64_MAX);
  auto port = Unsigned(j, "local_port", 65535);
  if (!err || !conn || !port) return std::nullopt;
  out.connect = {*id, static_cast<int>(*err), *conn, static_cast<uint16_t>(*port), *reason};
  return out;
}

}  // namespace usentry::netgate
