#include "transport/verbs_device.h"

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include <cstring>

namespace shelfmark {
namespace {

void SetError(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
}

// "a.b.c.d" when `gid` is an IPv4-mapped IPv6 address (::ffff:a.b.c.d), the
// form RoCE v2 GID entries take for an IPv4 address; "" otherwise.
std::string MappedIpv4(const ibv_gid& gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) != 0) return "";
  char text[INET_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET, gid.raw + 12, text, sizeof(text)) == nullptr) return "";
  return text;
}

// The RoCE v2 GID entry of `port` that carries an IPv4 address: rdma_cm over
// IPv4 and raw verbs peers both address the port through it.
void ChooseGid(ibv_context* context, VerbsPortInfo* port, int table_len) {
  for (int index = 0; index < table_len; ++index) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context, port->port_num, index, &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    std::string ipv4 = MappedIpv4(entry.gid);
    if (ipv4.empty()) continue;
    port->gid_index = index;
    port->ipv4 = std::move(ipv4);
    return;
  }
}

}  // namespace

uint32_t MtuBytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

std::vector<std::string> VerbsDevice::DeviceNames() {
  std::vector<std::string> names;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) return names;
  for (int i = 0; i < count; ++i) names.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return names;
}

Result<std::unique_ptr<VerbsDevice>> VerbsDevice::Open(std::string_view name,
                                                       std::string* error) {
  int count = 0;
  ibv_context** contexts = rdma_get_devices(&count);
  if (contexts == nullptr || count == 0) {
    if (contexts != nullptr) rdma_free_devices(contexts);
    SetError(error, "no RDMA device");
    return ErrorCode::INVALID_PARAMS;
  }
  ibv_context* context = nullptr;
  for (int i = 0; i < count && context == nullptr; ++i) {
    if (name.empty() || name == ibv_get_device_name(contexts[i]->device)) context = contexts[i];
  }
  rdma_free_devices(contexts);  // frees the array; librdmacm keeps the contexts open
  if (context == nullptr) {
    SetError(error, "no RDMA device named '" + std::string(name) + "'");
    return ErrorCode::INVALID_PARAMS;
  }

  std::unique_ptr<VerbsDevice> device(new VerbsDevice());
  device->name_ = ibv_get_device_name(context->device);
  device->context_ = context;

  ibv_device_attr device_attr{};
  ibv_port_attr port_attr{};
  VerbsPortInfo& port = device->port_;
  if (ibv_query_device(context, &device_attr) != 0 ||
      ibv_query_port(context, port.port_num, &port_attr) != 0) {
    SetError(error, "cannot query RDMA device " + device->name_ + ": " + std::strerror(errno));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (port_attr.state != IBV_PORT_ACTIVE) {
    SetError(error, "RDMA device " + device->name_ + " port 1 is not active (" +
                        ibv_port_state_str(port_attr.state) + ")");
    return ErrorCode::TRANSFER_FAIL;
  }
  port.active_mtu = port_attr.active_mtu;
  port.active_mtu_bytes = MtuBytes(port_attr.active_mtu);
  port.ethernet = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  port.max_qp_wr = static_cast<uint32_t>(device_attr.max_qp_wr);
  port.max_sge = static_cast<uint32_t>(device_attr.max_sge);
  port.max_qp_rd_atom = static_cast<uint32_t>(device_attr.max_qp_rd_atom);
  port.max_qp_init_rd_atom = static_cast<uint32_t>(device_attr.max_qp_init_rd_atom);
  if (port.ethernet) ChooseGid(context, &port, port_attr.gid_tbl_len);

  device->pd_ = ibv_alloc_pd(context);
  if (device->pd_ == nullptr) {
    SetError(error, "ibv_alloc_pd on " + device->name_ + " failed: " + std::strerror(errno));
    return ErrorCode::TRANSFER_FAIL;
  }
  return device;
}

VerbsDevice::~VerbsDevice() {
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
}

}  // namespace shelfmark
