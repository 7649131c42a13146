// The messages between the core and a plugin host process (kiln-plugin-host), which loads
// one plugin and serves its C ABI over a Unix socket. A message is a little-endian u32
// length, then that many bytes: an op (u8) and its fields, written with Writer and read back
// in the same order with Reader. Header-only and free of the rest of Kiln, so the host
// process links nothing but libc.
//
// Handles (clients, devices, executables, buffers) travel as the host's pointers, as u64.
// A reply (and the first message) starts with the tokens of the shared-memory regions the
// helper stopped reading since its last reply (u64 count, then u64 each; see kReleased),
// then the plugin's error code (u32, 0 = ok) and message; the fields follow only when the
// code is 0.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

namespace kiln::isolation {

enum class Op : uint8_t {
  kInitialize = 1,
  kAttributes,
  kClientCreate,
  kClientDestroy,
  kClientDevices,
  kDeviceDescription,
  kCapability,
  kCompile,
  kExecutableInfo,
  kExecutableDestroy,
  kExecute,
  kBufferFromHost,
  kBufferToHost,
  kBufferInfo,
  kBufferDestroy,
  kReleased,  // nothing but a reply: for the released regions it carries
  kMemoryStats,
  kCopyToDevice,
};

// The optional entries the helper says its plugin has (its first message).
constexpr uint8_t kHasMemoryStats = 1, kHasCopyToDevice = 2;

// Requests the core sends without waiting for a reply: destroying a handle. An error there
// has nowhere to go anyway (the core's destroy calls ignore it), so it saves a round trip.
inline bool IsOneWay(Op op) {
  return op == Op::kBufferDestroy || op == Op::kExecutableDestroy || op == Op::kClientDestroy;
}

class Writer {
 public:
  Writer& U8(uint8_t v) { return Raw(&v, 1); }
  Writer& U32(uint32_t v) { return Raw(&v, 4); }
  Writer& U64(uint64_t v) { return Raw(&v, 8); }
  Writer& I64(int64_t v) { return Raw(&v, 8); }
  Writer& Bytes(const void* data, size_t size) {
    U64(size);
    return Raw(data, size);
  }
  Writer& Str(std::string_view s) { return Bytes(s.data(), s.size()); }
  const std::string& data() const { return data_; }

 private:
  Writer& Raw(const void* p, size_t n) {
    data_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string data_;
};

// Reads fields in order; a read past the end sets !ok() and yields zeros (a malformed message
// is then reported, never read out of bounds).
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint8_t U8() { return Fixed<uint8_t>(); }
  uint32_t U32() { return Fixed<uint32_t>(); }
  uint64_t U64() { return Fixed<uint64_t>(); }
  int64_t I64() { return Fixed<int64_t>(); }
  std::string_view Bytes() {
    const uint64_t n = U64();
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::string Str() { return std::string(Bytes()); }
  bool ok() const { return ok_; }
  size_t position() const { return pos_; }

 private:
  template <typename T>
  T Fixed() {
    T v{};
    if (!ok_ || data_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Writes a whole message (length prefix and body); false when the peer is gone.
inline bool SendMessage(int fd, const std::string& body) {
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::string all(reinterpret_cast<const char*>(&n), 4);
  all += body;
  for (size_t done = 0; done < all.size();) {
    const ssize_t w = send(fd, all.data() + done, all.size() - done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly `n` bytes; false on end of stream or an error.
inline bool ReadExactly(int fd, void* out, size_t n) {
  char* p = static_cast<char*>(out);
  for (size_t done = 0; done < n;) {
    const ssize_t r = read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

// Polls `fd` for input without sleeping for up to `spin`: a reply or the next request usually
// comes within tens of microseconds, and waking from a blocking wait costs about as much
// again on each side. True when input is there.
inline bool SpinForInput(int fd, std::chrono::microseconds spin) {
  const auto until = std::chrono::steady_clock::now() + spin;
  pollfd p{fd, POLLIN, 0};
  do {
    if (poll(&p, 1, 0) > 0) return true;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < until);
  return false;
}
constexpr std::chrono::microseconds kSpin{30};

// Buffers at least this large travel through shared memory instead of inside a message: a
// memfd the core made, mapped and sealed against resizing (so the helper cannot truncate it
// under the core's mapping), passed after the message. The core keeps its regions mapped
// and reuses them (isolated_plugin.cc): faulting fresh shared pages in costs several times
// the copy itself.
// - buffer_from_host: the core copies the bytes into a region sealed against the helper's
//   writes and keeps it as the buffer's bytes on its side (buffer_to_host reads them there,
//   without a message); the helper maps it read-only and lends it to a 1.2 plugin, which
//   reads it in place. The request carries the region's token; when the helper stops
//   reading the region (the plugin calls on_done), a later reply carries the token back and
//   the core may reuse the region.
// - buffer_to_host of a buffer made in the helper: the core sends a region the helper maps
//   and the plugin writes, unmapped before the reply; the core copies out of it.
constexpr size_t kSharedMemoryMin = size_t{1} << 20;

// One marker byte with room for one descriptor (SCM_RIGHTS): what SendFd and ReceiveFd pass.
struct FdMessage {
  char marker = 'F';
  iovec iov{&marker, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  FdMessage(const FdMessage&) = delete;  // msg points into this object
};

// Sends `fd` as one marker byte with the descriptor attached; the peer reads it with
// ReceiveFd right after the message that announced it.
inline bool SendFd(int sock, int fd) {
  FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t n;
  do {
    n = sendmsg(sock, &m.msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}

// The descriptor SendFd sent, or -1.
inline int ReceiveFd(int sock) {
  FdMessage m;
  ssize_t n;
  do {
    n = recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (n != 1 || c == nullptr || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

// Messages are at most this large (a buffer's bytes travel inside one).
constexpr uint32_t kMaxMessage = 0xFFFFFFF0u;

}  // namespace kiln::isolation
