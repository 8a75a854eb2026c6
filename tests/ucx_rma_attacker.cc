// ucx_rma_attacker: what an attacker on the network does to a ucx node with
// bare UCX and no token (tests/hostile_test.cc, issue 28); it links UCX
// only. It takes the
// node's UCX worker address from the node's endpoint port (the address
// message is public: anyone who connects gets it), makes a UCX endpoint to
// that worker and, without ever sending a hello, tries one-sided gets and
// puts with UCX RMA. On tcp the packed rkey of a registration is the same
// bytes in every process, so it packs its own and also tries the rkey the
// master published, when UCX can unpack it.
//
//   ucx_rma_attacker ENDPOINT HEX_RKEY TRY...
//   TRY: get:ADDRESS:LENGTH or put:ADDRESS:LENGTH (ADDRESS in hex, no 0x)
//
// Prints (stderr) one line per try and rkey: "try <try> <rkey> ok <first 8 bytes hex>"
// (a get that returned bytes, a put that completed), "try <try> <rkey> failed
// <UCX status>", "try <try> <rkey> timeout" (nothing came back within 1 s) or "... skipped" (bytes that are
// not a packed UCX rkey: unpacking them would crash UCX itself).
// Puts write 0xAB bytes. Exit 0 when every try ran, 2 on bad usage or when
// UCX itself could not start.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kTryMs = 1000;

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::strtoul(hex.substr(i, 2).c_str(), nullptr, 16)));
  }
  return out;
}

std::string ToHex(const void* data, size_t size) {
  std::string out;
  char byte[3];
  for (size_t i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", static_cast<const unsigned char*>(data)[i]);
    out += byte;
  }
  return out;
}

// A packed UCX rkey: [md_map u64][mem_type u8], then per md bit [size u8][bytes].
bool LooksPacked(const std::string& packed) {
  if (packed.size() < 9) return false;
  uint64_t md_map = 0;
  std::memcpy(&md_map, packed.data(), 8);
  if (md_map == 0 || md_map > 0xff) return false;
  size_t at = 9;
  for (; md_map != 0; md_map &= md_map - 1) {
    if (at >= packed.size()) return false;
    at += 1 + static_cast<uint8_t>(packed[at]);
    if (at > packed.size()) return false;
  }
  return true;
}

// The UCX worker address in the message a node's endpoint port sends to
// whoever connects ("SMWA": magic u32, version u8, ticket u64, nonce 32
// bytes, then the address as u32 length + bytes, little-endian); "" when
// none came.
std::string FetchWorkerAddress(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(endpoint.substr(colon + 1).c_str())));
  if (colon == std::string::npos ||
      inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return "";
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string message;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    char chunk[4096];
    for (ssize_t n; (n = ::read(fd, chunk, sizeof(chunk))) > 0;) message.append(chunk, n);
  }
  ::close(fd);
  constexpr size_t kAt = 4 + 1 + 8 + 32;
  if (message.size() < kAt + 4) return "";
  uint32_t length = 0;
  std::memcpy(&length, message.data() + kAt, 4);
  if (message.size() < kAt + 4 + length) return "";
  return message.substr(kAt + 4, length);
}

void OnError(void* /*arg*/, ucp_ep_h /*ep*/, ucs_status_t /*status*/) {}

struct Attacker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  std::vector<char> buffer = std::vector<char>(1 << 20);
  ucp_mem_h memh = nullptr;
  std::string own_rkey;

  bool Start(const std::string& worker_address) {
    ucp_config_t* config = nullptr;
    if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return false;
    if (std::getenv("UCX_TLS") == nullptr) ucp_config_modify(config, "TLS", "tcp");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
    const ucs_status_t init = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (init != UCS_OK) return false;
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(context, &wp, &worker) != UCS_OK) return false;
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = buffer.data();
    mp.length = buffer.size();
    if (ucp_mem_map(context, &mp, &memh) != UCS_OK) return false;
    void* packed = nullptr;
    size_t packed_size = 0;
    if (ucp_rkey_pack(context, memh, &packed, &packed_size) != UCS_OK) return false;
    own_rkey.assign(static_cast<const char*>(packed), packed_size);
    ucp_rkey_buffer_release(packed);
    return Connect(worker_address);
  }

  bool Connect(const std::string& worker_address) {
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.address = reinterpret_cast<const ucp_address_t*>(worker_address.data());
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = &OnError;
    return ucp_ep_create(worker, &ep_params, &ep) == UCS_OK;
  }

  // One get or put; the line to print.
  std::string Try(bool put, uint64_t address, size_t length, const std::string& rkey_bytes,
                  const std::string& worker_address) {
    if (length > buffer.size()) length = buffer.size();
    ucp_rkey_h rkey = nullptr;
    std::string padded = rkey_bytes + std::string(256, '\0');
    if (ucp_ep_rkey_unpack(ep, padded.data(), &rkey) != UCS_OK) return "failed unpack";
    if (put) std::memset(buffer.data(), 0xab, length);
    else std::memset(buffer.data(), 0, length);
    ucp_request_param_t param{};
    ucs_status_ptr_t request = put ? ucp_put_nbx(ep, buffer.data(), length, address, rkey, &param)
                                   : ucp_get_nbx(ep, buffer.data(), length, address, rkey, &param);
    ucs_status_t status = UCS_OK;
    if (UCS_PTR_IS_ERR(request)) {
      status = UCS_PTR_STATUS(request);
      request = nullptr;
    }
    if (request != nullptr && put) {  // the put is at the owner once a flush completes
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTryMs);
      while (ucp_request_check_status(request) == UCS_INPROGRESS &&
             std::chrono::steady_clock::now() < until) {
        ucp_worker_progress(worker);
      }
      if (ucp_request_check_status(request) != UCS_INPROGRESS) ucp_request_free(request);
      request = ucp_ep_flush_nbx(ep, &param);
      if (UCS_PTR_IS_ERR(request)) {
        status = UCS_PTR_STATUS(request);
        request = nullptr;
      }
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTryMs);
    while (request != nullptr && ucp_request_check_status(request) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < until) {
      ucp_worker_progress(worker);
    }
    std::string line;
    if (request != nullptr && ucp_request_check_status(request) == UCS_INPROGRESS) {
      line = "timeout";
      Reconnect(request, worker_address);  // cancels the request
    } else {
      if (request != nullptr) {
        status = ucp_request_check_status(request);
        ucp_request_free(request);
      }
      line = status == UCS_OK ? "ok " + ToHex(buffer.data(), length < 8 ? length : 8)
                              : std::string("failed ") + ucs_status_string(status);
      if (status != UCS_OK) Reconnect(nullptr, worker_address);
    }
    ucp_rkey_destroy(rkey);
    return line;
  }

  void Reconnect(void* pending, const std::string& worker_address) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t close = ucp_ep_close_nbx(ep, &param);
    while (close != nullptr && !UCS_PTR_IS_ERR(close) &&
           ucp_request_check_status(close) == UCS_INPROGRESS) {
      ucp_worker_progress(worker);
    }
    if (close != nullptr && !UCS_PTR_IS_ERR(close)) ucp_request_free(close);
    if (pending != nullptr) {
      while (ucp_request_check_status(pending) == UCS_INPROGRESS) ucp_worker_progress(worker);
      ucp_request_free(pending);
    }
    Connect(worker_address);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ENDPOINT HEX_RKEY get|put:ADDRESS:LENGTH...\n", argv[0]);
    return 2;
  }
  const std::string worker_address = FetchWorkerAddress(argv[1]);
  if (worker_address.empty()) {
    std::fprintf(stderr, "no worker address from %s\n", argv[1]);
    return 2;
  }
  Attacker attacker;
  if (!attacker.Start(worker_address)) {
    std::fprintf(stderr, "UCX did not start\n");
    return 2;
  }
  const std::string published = FromHex(argv[2]);
  for (int i = 3; i < argc; ++i) {
    const std::string spec = argv[i];
    const size_t a = spec.find(':'), b = spec.rfind(':');
    if (a == std::string::npos || a == b) return 2;
    const bool put = spec.substr(0, a) == "put";
    const uint64_t address = std::strtoull(spec.substr(a + 1, b - a - 1).c_str(), nullptr, 16);
    const size_t length = std::strtoull(spec.substr(b + 1).c_str(), nullptr, 10);
    for (const auto& [name, rkey] : {std::pair<const char*, const std::string*>{"own", &attacker.own_rkey},
                                     {"published", &published}}) {
      if (!LooksPacked(*rkey)) {  // unpacking other bytes would crash UCX (no length)
        std::fprintf(stderr, "try %s %s skipped: not a packed rkey\n", spec.c_str(), name);
        continue;
      }
      std::fprintf(stderr, "try %s %s %s\n", spec.c_str(), name,
                   attacker.Try(put, address, length, *rkey, worker_address).c_str());
    }
  }
  return 0;
}
