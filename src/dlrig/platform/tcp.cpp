// TCP with deadlines (tcp.hpp).
#include "dlrig/platform/tcp.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

namespace dlrig::tcp {
namespace {

int millis_left(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until fd is readable; false at the deadline.
bool wait_readable(int fd, Deadline deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, millis_left(deadline));
    if (r > 0)
      return true;
    if (r == 0 || errno != EINTR)
      return false;
  }
}

std::string address_of(const sockaddr_storage &a) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a.ss_family == AF_INET) {
    const auto *v4 = reinterpret_cast<const sockaddr_in *>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto *v6 = reinterpret_cast<const sockaddr_in6 *>(&a);
    port = ntohs(v6->sin6_port);
    // An IPv4 peer of a dual-stack listener (::ffff:a.b.c.d) as its IPv4 address; IPv6 as
    // [address]:port, the form --rendezvous takes.
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], host, sizeof host);
      return fmt::format("{}:{}", host, port);
    }
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    return fmt::format("[{}]:{}", host, port);
  }
  return fmt::format("{}:{}", host, port);
}

Error io(std::string message) {
  return make_error(ErrorKind::io, std::move(message));
}

} // namespace

Socket::~Socket() {
  if (fd_ >= 0)
    ::close(fd_);
}

Socket::Socket(Socket &&o) noexcept : fd_(o.fd_), peer_(std::move(o.peer_)) {
  o.fd_ = -1;
}

Socket &Socket::operator=(Socket &&o) noexcept {
  if (this != &o) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = o.fd_;
    peer_ = std::move(o.peer_);
    o.fd_ = -1;
  }
  return *this;
}

Result<bool> Socket::send_all(const std::string &bytes) const {
  std::size_t at = 0;
  while (at < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return io(fmt::format("sending to {}: {}", peer_, std::strerror(errno)));
    at += static_cast<std::size_t>(n);
  }
  return true;
}

Result<std::string> Socket::read_line(std::size_t max, Deadline deadline) const {
  std::string line;
  auto shown = [&] {
    std::string s;
    for (char c : line.substr(0, 80))
      s += c >= 32 && c < 127 ? std::string(1, c)
                              : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    return "\"" + s + (line.size() > 80 ? "...\"" : "\"");
  };
  for (;;) {
    if (!wait_readable(fd_, deadline))
      return io(fmt::format("no complete line from {} before the deadline (read so far: {})", peer_,
                            shown()));
    char c = 0;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return io(fmt::format("reading from {}: {}", peer_, std::strerror(errno)));
    if (n == 0)
      return make_error(ErrorKind::bad_input,
                        fmt::format("{} closed the connection before a complete line (read so "
                                    "far: {})",
                                    peer_, shown()));
    if (c == '\n')
      return line;
    line += c;
    if (line.size() > max)
      return make_error(ErrorKind::bad_input, fmt::format("{} sent a line longer than {} bytes: {}",
                                                          peer_, max, shown()));
  }
}

Socket::Available Socket::read_available(std::size_t max) const {
  Available a;
  std::string buf(std::max<std::size_t>(max, 1), '\0');
  while (a.bytes.size() < max) {
    ssize_t n = ::recv(fd_, buf.data(), max - a.bytes.size(), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (n <= 0) { // end of stream, or the connection failed
      a.closed = true;
      break;
    }
    a.bytes.append(buf.data(), static_cast<std::size_t>(n));
  }
  return a;
}

bool Socket::keep_alive(int idle, int interval, int count) const {
  const int on = 1;
  return ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) == 0 &&
         ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) == 0 &&
         ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) == 0 &&
         ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count) == 0;
}

Result<Socket> listen_on(int port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6)
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return io(fmt::format("socket: {}", std::strerror(errno)));
  Socket s(fd);
  int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int r = 0;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero); // IPv4 too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<std::uint16_t>(port));
    r = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    r = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  }
  if (r != 0 || ::listen(fd, 64) != 0)
    return io(fmt::format("cannot listen on port {}: {}", port, std::strerror(errno)));
  return s;
}

Result<Socket> accept_one(const Socket &listener, Deadline deadline) {
  for (;;) {
    if (!wait_readable(listener.fd(), deadline))
      return io("no connection before the deadline");
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    int fd = ::accept4(listener.fd(), reinterpret_cast<sockaddr *>(&a), &len, SOCK_CLOEXEC);
    if (fd >= 0)
      return Socket(fd, address_of(a));
    if (errno != EINTR && errno != ECONNABORTED)
      return io(fmt::format("accept: {}", std::strerror(errno)));
  }
}

Result<Socket> connect_to(const std::string &host, int port, Deadline deadline) {
  std::string last = "no attempt";
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    const std::string service = std::to_string(port);
    int g = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
    if (g != 0) {
      last = fmt::format("cannot resolve {}: {}", host, ::gai_strerror(g));
    } else {
      for (addrinfo *ai = found; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
          continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          sockaddr_storage a{};
          std::memcpy(&a, ai->ai_addr, std::min<std::size_t>(ai->ai_addrlen, sizeof a));
          ::freeaddrinfo(found);
          return Socket(fd, address_of(a));
        }
        last = fmt::format("{}:{}: {}", host, port, std::strerror(errno));
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    if (millis_left(deadline) <= 0)
      return io(
          fmt::format("could not connect to {}:{} before the deadline ({})", host, port, last));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

} // namespace dlrig::tcp
