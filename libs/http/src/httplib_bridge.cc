#include "httplib_bridge.h"

#include "absl/time/clock.h"

namespace gradsync::http {

void RequestStream::StartBody() { read_deadline_ = absl::Now() + io_timeout_; }

ssize_t RequestStream::read(char* ptr, size_t size) {
  if (!read_deadline_.has_value()) return static_cast<ssize_t>(c_.ReadBuffered(ptr, size));
  const ssize_t n = c_.Read(ptr, size, *read_deadline_);
  if (n <= 0) read_failed_ = true;
  return n;
}

ssize_t RequestStream::write(const char* ptr, size_t size) {
  if (!write_deadline_.has_value()) write_deadline_ = absl::Now() + io_timeout_;
  return c_.Write(ptr, size, *write_deadline_);
}

void RequestStream::get_remote_ip_and_port(std::string& ip, int& port) const { SocketAddress(c_.fd(), true, ip, port); }

void RequestStream::get_local_ip_and_port(std::string& ip, int& port) const { SocketAddress(c_.fd(), false, ip, port); }

bool RequestServer::ServeOne(RequestStream& stream, bool last) {
  bool closed = false;
  // process_request calls the setup hook once the request line and headers are parsed, before
  // it reads any body.
  const bool ok = process_request(stream, last, closed, [&stream](httplib::Request&) { stream.StartBody(); });
  return ok && !closed && !last && stream.reusable();
}

}  // namespace gradsync::http
