// The line discipline of an emulated pseudo-terminal (Linux's n_tty, the parts programs
// notice): input processing of what the master writes (ICRNL/INLCR/IGNCR/ISTRIP, ISIG
// characters, canonical line editing with VERASE/VWERASE/VKILL/VEOF, echo with
// ECHOE/ECHOK/ECHOKE/ECHOCTL/ECHONL), output processing of what the replica writes
// (OPOST with ONLCR/OCRNL/ONOCR/ONLRET), and the two byte queues between the ends.
//
// Pure data structure: no tasks, no locks, no signals. ReceiveInput reports the signals
// the terminal's foreground group must get; the caller (pty.cc) sends them.
#ifndef USENTRY_SENTRY_FSIMPL_PTY_LINE_H_
#define USENTRY_SENTRY_FSIMPL_PTY_LINE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "abi/misc.h"

namespace usentry::sentry::fsimpl {

// Input bytes that may wait for the replica to read them, and output bytes for the
// master: about what Linux buffers (a 64 KiB flip-buffer limit per direction).
inline constexpr size_t kPtyQueueBytes = 65536;
// Longest canonical line (N_TTY_BUF_SIZE - 1): later ordinary characters are dropped.
inline constexpr size_t kMaxCanonLine = 4095;

// The termios a new pty starts with (Linux's tty_std_termios, 38400 baud, CS8).
abi::Termios DefaultTermios();

class LineDiscipline {
 public:
  LineDiscipline() : termios_(DefaultTermios()) {}

  const abi::Termios& termios() const { return termios_; }
  // Switching ICANON off makes the line being edited readable as raw bytes; switching it
  // on with raw bytes pending pushes them as one line (as Linux does).
  void SetTermios(const abi::Termios& t);

  // --- master -> replica ---
  // Processes up to `n` bytes written to the master. Returns how many were taken (fewer
  // when the input queue is full; 0 means none fit). Signals for ISIG characters are
  // appended to `signals` (they also flush both queues unless NOFLSH).
  size_t ReceiveInput(const uint8_t* p, size_t n, std::vector<int>* signals);
  // FIONREAD on the replica: bytes of completed lines (canonical) or queued bytes.
  size_t InputAvailable() const;
  // Whether a replica read returns now with at least `min` bytes (non-canonical) or a
  // line (canonical, where an end-of-file line counts).
  bool InputReady(size_t min) const;
  // Canonical: the next line is an empty VEOF line (the read returns 0: end of file).
  bool InputAtEof() const;
  // Canonical: up to the end of the first line; raw: whatever is queued. Returns the
  // count (0 with an EOF line consumed, or nothing available: check InputAvailable).
  size_t ReadInput(uint8_t* dst, size_t n);
  // Room for more input (master writes block/EAGAIN at 0).
  size_t InputRoom() const;

  // --- replica -> master ---
  // Output-processes up to `n` bytes written to the replica; returns how many were taken
  // (0 when the output queue is full).
  size_t WriteOutput(const uint8_t* p, size_t n);
  size_t OutputAvailable() const { return out_.size(); }
  size_t ReadOutput(uint8_t* dst, size_t n);
  size_t OutputRoom() const {
    return out_.size() >= kPtyQueueBytes ? 0 : kPtyQueueBytes - out_.size();
  }

  // tcflush: TCIFLUSH drops unread input (and the line being edited), TCOFLUSH unread
  // output.
  void FlushInput();
  void FlushOutput() { out_.clear(); }

  bool canonical() const;

 private:
  struct Line {
    std::string data;
    bool eof = false;  // ended by VEOF (the character is not part of the data)
  };
  bool L(uint32_t bit) const { return termios_.lflag & bit; }
  bool I(uint32_t bit) const { return termios_.iflag & bit; }
  uint8_t CC(int i) const { return termios_.cc[i]; }
  bool IsCC(uint8_t c, int i) const { return CC(i) != 0 && c == CC(i); }  // 0: disabled
  size_t InputBytes() const;
  // Appends `c` to the output queue with OPOST processing (echo and replica writes).
  void PutOutput(uint8_t c);
  void Echo(uint8_t c);
  void EchoRaw(const char* s);
  void EraseOne();
  void CompleteLine(bool eof);

  abi::Termios termios_;
  std::deque<Line> lines_;   // canonical: completed lines, oldest first
  std::string edit_;         // canonical: the line being edited
  std::deque<uint8_t> raw_;  // non-canonical: queued input
  std::deque<uint8_t> out_;  // processed output for the master
  size_t column_ = 0;        // output column (ONOCR, tab erase)
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PTY_LINE_H_
