// SPDX-License-Identifier: Apache-2.0
// The fetch seam on cpp-httplib: one blocking request per call, certificates verified, the body
// capped while it is read, no redirect followed.
#include <mcpcore/transport/http_fetch.hpp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

std::optional<http_url_parts> parse_http_url(std::string_view url) noexcept {
  http_url_parts out;
  constexpr std::string_view https = "https://";
  constexpr std::string_view http = "http://";
  if (url.size() > https.size() && mcpcore::detail::ascii_iequals(url.substr(0, https.size()), https)) {
    out.https = true;
    url.remove_prefix(https.size());
  } else if (url.size() > http.size() && mcpcore::detail::ascii_iequals(url.substr(0, http.size()), http)) {
    url.remove_prefix(http.size());
  } else {
    return std::nullopt;
  }
  if (url.find('#') != std::string_view::npos) return std::nullopt;
  for (const char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20U || u >= 0x7FU) return std::nullopt;  // no blank, control or raw non-ASCII byte
  }
  const std::size_t end = url.find_first_of("/?");
  const std::string_view authority = url.substr(0, end);
  if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view host = authority;
  if (host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = host.substr(1, close - 1);
  } else if (const std::size_t colon = host.find(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host.empty()) return std::nullopt;
  out.authority = authority;
  out.host = host;
  out.path_and_query = end == std::string_view::npos ? std::string_view{} : url.substr(end);
  return out;
}

bool is_loopback_host(std::string_view host) noexcept {
  if (mcpcore::detail::ascii_iequals(host, "localhost") || host == "::1") return true;
  if (!host.starts_with("127.")) return false;
  for (const char c : host) {
    if ((c < '0' || c > '9') && c != '.') return false;
  }
  return true;
}

namespace {

error fetch_error(std::errc code, std::string message) { return error{std::make_error_code(code), std::move(message)}; }

void set_timeouts(httplib::Client& client, std::chrono::milliseconds timeout) {
  const auto sec = static_cast<std::time_t>(timeout.count() / 1000);
  const auto usec = static_cast<std::time_t>((timeout.count() % 1000) * 1000);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
}

result<fetch_response> fetch_once(const httplib_fetcher_options& options, const fetch_request& request) {
  const auto url = parse_http_url(request.url);
  if (!url) return fail(fetch_error(std::errc::invalid_argument, "not an http(s) URL without credentials or fragment: " + request.url));
  if (!url->https && !options.allow_http && !is_loopback_host(url->host)) {
    return fail(fetch_error(std::errc::permission_denied, "plain http:// to a host that is not loopback: " + request.url));
  }
  httplib::Client client((url->https ? "https://" : "http://") + std::string{url->authority});
  set_timeouts(client, request.timeout);
  client.set_follow_location(false);
  client.set_keep_alive(false);
  client.enable_server_certificate_verification(options.verify_certificates);
  if (!options.ca_file.empty()) client.set_ca_cert_path(options.ca_file);

  httplib::Request req;
  req.method = request.method;
  // The request target: the path and query, at least "/".
  // Built by appending: GCC 12 at -O3 warns (-Werror=restrict) about an insert at the front.
  const std::string_view target = url->path_and_query;
  if (target.empty() || target.front() == '?') req.path = "/";
  req.path.append(target);
  for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
  if (!request.body.empty() || !request.content_type.empty()) {
    req.body = request.body;
    req.set_header("Content-Type", request.content_type);
  }
  fetch_response out;
  bool too_large = false;
  const std::size_t cap = request.max_body_bytes;
  req.response_handler = [&too_large, cap](const httplib::Response& r) {
    if (!r.has_header("Content-Length")) return true;
    const std::string declared = r.get_header_value("Content-Length");
    // More digits than the cap has, or a larger value: refused before the body is read.
    if (declared.size() > std::to_string(cap).size() ||
        (declared.size() == std::to_string(cap).size() && declared > std::to_string(cap))) {
      too_large = true;
      return false;
    }
    return true;
  };
  req.content_receiver = [&out, &too_large, cap](const char* data, std::size_t size, std::uint64_t /*offset*/,
                                                  std::uint64_t /*total*/) {
    if (size > cap - out.body.size()) {
      too_large = true;
      return false;
    }
    out.body.append(data, size);
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const auto started = std::chrono::steady_clock::now();
  const bool ok = client.send(req, res, err);
  if (too_large) {
    return fail(fetch_error(std::errc::message_size, "the answer of " + request.url + " is larger than " +
                                                         std::to_string(cap) + " bytes"));
  }
  if (!ok) {
    const bool slow = std::chrono::steady_clock::now() - started >= request.timeout;
    if (err == httplib::Error::ConnectionTimeout || ((err == httplib::Error::Read || err == httplib::Error::Connection) && slow)) {
      return fail(fetch_error(std::errc::timed_out, "no answer from " + request.url + " within the timeout"));
    }
    return fail(fetch_error(std::errc::connection_refused, "fetching " + request.url + " failed: " + httplib::to_string(err)));
  }
  out.status = res.status;
  out.content_type = res.get_header_value("Content-Type");
  return out;
}

}  // namespace

fetch_function httplib_fetcher(httplib_fetcher_options options) {
  return [options = std::move(options)](const fetch_request& request) -> result<fetch_response> {
    try {
      return fetch_once(options, request);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      return fail(fetch_error(std::errc::connection_refused, "fetching " + request.url + " failed: " + e.what()));
    }
  };
}

}  // namespace transport

MCPCORE_END_NAMESPACE
