#pragma once
// TCP, the seam for `dlrig bench nccl.* --rank` (bench/ranks.hpp): a listening socket, a
// connection, and line-sized reads and writes, every wait bounded by a deadline. Blocking sockets
// polled with poll(2); no TLS, no framing beyond lines. Failures are Results with the reason in
// words (the address, the system's error). Not thread-safe; one owner per socket.
#include "dlrig/core/result.hpp"

#include <chrono>
#include <cstddef>
#include <string>

namespace dlrig::tcp {

using Deadline = std::chrono::steady_clock::time_point;

// An open socket, closed by the destructor.
class Socket {
public:
  Socket() = default;
  explicit Socket(int fd, std::string peer = "") : fd_(fd), peer_(std::move(peer)) {}
  ~Socket();
  Socket(Socket &&o) noexcept;
  Socket &operator=(Socket &&o) noexcept;
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  int fd() const { return fd_; }
  // "10.0.0.2:51234" for an accepted or connected socket.
  const std::string &peer() const { return peer_; }

  // Writes every byte (a peer that went away is an error).
  Result<bool> send_all(const std::string &bytes) const;
  // One line without its '\n', at most `max` bytes; an error at the deadline, at end of stream
  // before a '\n', or past `max` bytes (the bytes read so far are in the message, escaped).
  Result<std::string> read_line(std::size_t max, Deadline deadline) const;
  // What has arrived, without waiting: at most `max` bytes (empty when nothing has), and whether
  // the peer closed its end (or the connection failed: reset, unreachable).
  struct Available {
    std::string bytes;
    bool closed = false;
  };
  Available read_available(std::size_t max) const;
  // TCP keep-alive probes after `idle` seconds of silence, every `interval` seconds, `count` of
  // them: a peer whose host vanished (power loss, a cut link: no FIN, no RST) then reads as
  // closed after idle + interval x count seconds, where the system's default waits two hours.
  // False when the system refuses (a socket that is not TCP).
  bool keep_alive(int idle, int interval, int count) const;

private:
  int fd_ = -1;
  std::string peer_;
};

// Listens on every address of this host at `port` (SO_REUSEADDR).
Result<Socket> listen_on(int port);
// The next connection to a listening socket; an error at the deadline.
Result<Socket> accept_one(const Socket &listener, Deadline deadline);
// Connects to host:port, trying again every 200 ms while the address refuses (the listener may
// not be up yet) until the deadline.
Result<Socket> connect_to(const std::string &host, int port, Deadline deadline);

} // namespace dlrig::tcp
