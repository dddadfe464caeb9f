// Line discipline of emulated pseudo-terminals (see pty_line.h).
#include "sentry/fsimpl/pty_line.h"

#include <signal.h>
#include <termios.h>

#include <algorithm>
#include <cctype>

namespace usentry::sentry::fsimpl {
namespace {

bool IsControl(uint8_t c) { return c < 0x20 || c == 0x7f; }
bool IsWordChar(uint8_t c) { return std::isalnum(c) || c == '_'; }

}  // namespace

abi::Termios DefaultTermios() {
  abi::Termios t{};
  t.iflag = ICRNL | IXON;
  t.oflag = OPOST | ONLCR;
  t.cflag = B38400 | CS8 | CREAD;
  t.lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN;
  // Linux's INIT_C_CC: ^C ^\ DEL ^U ^D, VTIME 0, VMIN 1, ^Q ^S ^Z, ^R ^O ^W ^V.
  t.cc[VINTR] = 003;
  t.cc[VQUIT] = 034;
  t.cc[VERASE] = 0177;
  t.cc[VKILL] = 025;
  t.cc[VEOF] = 004;
  t.cc[VTIME] = 0;
  t.cc[VMIN] = 1;
  t.cc[VSTART] = 021;
  t.cc[VSTOP] = 023;
  t.cc[VSUSP] = 032;
  t.cc[VREPRINT] = 022;
  t.cc[VDISCARD] = 017;
  t.cc[VWERASE] = 027;
  t.cc[VLNEXT] = 026;
  return t;
}

bool LineDiscipline::canonical() const { return L(ICANON); }

void LineDiscipline::SetTermios(const abi::Termios& t) {
  bool was_canon = canonical();
  termios_ = t;
  if (was_canon && !canonical()) {
    for (const Line& l : lines_) raw_.insert(raw_.end(), l.data.begin(), l.data.end());
    raw_.insert(raw_.end(), edit_.begin(), edit_.end());
    lines_.clear();
    edit_.clear();
  } else if (!was_canon && canonical() && !raw_.empty()) {
    lines_.push_back({std::string(raw_.begin(), raw_.end()), false});
    raw_.clear();
  }
}

size_t LineDiscipline::InputBytes() const {
  size_t n = edit_.size() + raw_.size();
  for (const Line& l : lines_) n += l.data.size() + (l.eof ? 1 : 0);
  return n;
}

size_t LineDiscipline::InputRoom() const {
  size_t used = InputBytes();
  return used >= kPtyQueueBytes ? 0 : kPtyQueueBytes - used;
}

size_t LineDiscipline::InputAvailable() const {
  if (!canonical()) return raw_.size();
  size_t n = 0;
  for (const Line& l : lines_) n += l.data.size();
  return n;
}

bool LineDiscipline::InputReady(size_t min) const {
  if (canonical()) return !lines_.empty();
  return raw_.size() >= std::max<size_t>(min, 1);
}

bool LineDiscipline::InputAtEof() const {
  return canonical() && !lines_.empty() && lines_.front().eof && lines_.front().data.empty();
}

size_t LineDiscipline::ReadInput(uint8_t* dst, size_t n) {
  if (canonical()) {
    if (lines_.empty()) return 0;
    Line& l = lines_.front();
    size_t k = std::min(n, l.data.size());
    std::copy_n(l.data.begin(), k, dst);
    l.data.erase(0, k);
    if (l.data.empty()) lines_.pop_front();
    return k;
  }
  size_t k = std::min(n, raw_.size());
  std::copy_n(raw_.begin(), k, dst);
  raw_.erase(raw_.begin(), raw_.begin() + k);
  return k;
}

void LineDiscipline::FlushInput() {
  lines_.clear();
  edit_.clear();
  raw_.clear();
}

void LineDiscipline::PutOutput(uint8_t c) {
  if (!(termios_.oflag & OPOST)) {
    out_.push_back(c);
    return;
  }
  const uint32_t o = termios_.oflag;
  switch (c) {
    case '\n':
      if (o & (ONLRET | ONLCR)) column_ = 0;
      if (o & ONLCR) out_.push_back('\r');
      out_.push_back('\n');
      return;
    case '\r':
      if ((o & ONOCR) && column_ == 0) return;
      if (o & OCRNL) {
        if (o & ONLRET) column_ = 0;
        out_.push_back('\n');
        return;
      }
      column_ = 0;
      out_.push_back('\r');
      return;
    case '\t':
      column_ = (column_ | 7) + 1;
      out_.push_back('\t');
      return;
    case '\b':
      if (column_ > 0) --column_;
      out_.push_back('\b');
      return;
    default:
      if (!IsControl(c)) ++column_;
      out_.push_back(c);
  }
}

void LineDiscipline::EchoRaw(const char* s) {
  for (; *s; ++s) PutOutput(static_cast<uint8_t>(*s));
}

void LineDiscipline::Echo(uint8_t c) {
  // ECHOCTL shows control characters other than TAB and NL as ^X (DEL as ^?).
  if (L(ECHOCTL) && IsControl(c) && c != '\t' && c != '\n') {
    PutOutput('^');
    PutOutput(c ^ 0x40);
    return;
  }
  PutOutput(c);
}

void LineDiscipline::EraseOne() {
  uint8_t c = edit_.back();
  edit_.pop_back();
  if (!L(ECHO)) return;
  if (!L(ECHOE)) {
    Echo(CC(VERASE));
    return;
  }
  // Visual erase: back over the character (two cells for a ^X), blank it, back again.
  int cells = (L(ECHOCTL) && IsControl(c) && c != '\t') ? 2 : 1;
  for (int i = 0; i < cells; ++i) EchoRaw("\b \b");
}

void LineDiscipline::CompleteLine(bool eof) {
  lines_.push_back({std::move(edit_), eof});
  edit_.clear();
}

size_t LineDiscipline::ReceiveInput(const uint8_t* p, size_t n, std::vector<int>* signals) {
  size_t done = 0;
  for (; done < n; ++done) {
    if (InputRoom() == 0) break;
    uint8_t c = p[done];
    if (I(ISTRIP)) c &= 0x7f;
    if (c == '\r') {
      if (I(IGNCR)) continue;
      if (I(ICRNL)) c = '\n';
    } else if (c == '\n' && I(INLCR)) {
      c = '\r';
    }
    if (L(ISIG)) {
      int sig = IsCC(c, VINTR) ? SIGINT : IsCC(c, VQUIT) ? SIGQUIT : IsCC(c, VSUSP) ? SIGTSTP : 0;
      if (sig != 0) {
        if (!L(NOFLSH)) {
          FlushInput();
          FlushOutput();
        }
        signals->push_back(sig);
        if (L(ECHO)) Echo(c);
        continue;
      }
    }
    if (!canonical()) {
      if (L(ECHO)) Echo(c);
      raw_.push_back(c);
      continue;
    }
    if (IsCC(c, VERASE)) {
      if (!edit_.empty()) EraseOne();
      continue;
    }
    if (L(IEXTEN) && IsCC(c, VWERASE)) {
      while (!edit_.empty() && !IsWordChar(edit_.back())) EraseOne();
      while (!edit_.empty() && IsWordChar(edit_.back())) EraseOne();
      continue;
    }
    if (IsCC(c, VKILL)) {
      if (edit_.empty()) continue;
      if (L(ECHO) && L(ECHOK) && L(ECHOKE) && L(ECHOE)) {
        while (!edit_.empty()) EraseOne();  // erases the line on the screen
        continue;
      }
      edit_.clear();
      if (L(ECHO)) {
        Echo(c);
        if (L(ECHOK)) PutOutput('\n');
      }
      continue;
    }
    if (IsCC(c, VEOF)) {
      CompleteLine(true);  // the EOF character itself is neither stored nor echoed
      continue;
    }
    if (c == '\n' || IsCC(c, VEOL) || (L(IEXTEN) && IsCC(c, VEOL2))) {
      if (L(ECHO) || (c == '\n' && L(ECHONL))) Echo(c);
      edit_.push_back(static_cast<char>(c));
      CompleteLine(false);
      continue;
    }
    if (edit_.size() >= kMaxCanonLine) continue;  // a full line takes only terminators
    if (L(ECHO)) Echo(c);
    edit_.push_back(static_cast<char>(c));
  }
  return done;
}

size_t LineDiscipline::WriteOutput(const uint8_t* p, size_t n) {
  size_t done = 0;
  // Two bytes of room cover the largest expansion of one byte (NL -> CR NL).
  while (done < n && OutputRoom() >= 2) PutOutput(p[done++]);
  return done;
}

size_t LineDiscipline::ReadOutput(uint8_t* dst, size_t n) {
  size_t k = std::min(n, out_.size());
  std::copy_n(out_.begin(), k, dst);
  out_.erase(out_.begin(), out_.begin() + k);
  return k;
}

}  // namespace usentry::sentry::fsimpl
