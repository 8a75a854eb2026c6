// VerbsDevice: one opened RDMA device (setup side of the "rdma" engine): its
// verbs context, a protection domain, and what the engine needs to know about
// port 1: state, active MTU (soft-RoCE reports 1024 on a 1500-byte link), and
// the GID index of the RoCE v2 entry that carries an IPv4 address.
//
// The context is the one librdmacm holds for the device (rdma_get_devices),
// so queue pairs of rdma_cm ids bound to this device can use this PD and the
// memory registered on it.
//
// Contracts:
//  - Open() fails with a message (never crashes) when there is no RDMA
//    device, the name is unknown, or port 1 is not active;
//  - the PD lives as long as the VerbsDevice; every MR, CQ and QP made on it
//    must be destroyed before it.
//
// Thread safety: immutable after Open(); the verbs objects it hands out are
// used under the callers' own locking.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shelfmark {

struct VerbsPortInfo {
  uint8_t port_num = 1;
  ibv_mtu active_mtu = IBV_MTU_1024;
  uint32_t active_mtu_bytes = 1024;
  bool ethernet = false;  // RoCE (link layer Ethernet) rather than InfiniBand
  int gid_index = -1;     // RoCE v2 entry with an IPv4 address; -1: none
  std::string ipv4;       // that entry's address ("" when none)
  uint32_t max_qp_wr = 0;
  uint32_t max_sge = 0;
  uint32_t max_qp_rd_atom = 0;       // READs a QP serves at once (responder)
  uint32_t max_qp_init_rd_atom = 0;  // READs a QP has outstanding (initiator)
};

class VerbsDevice {
 public:
  // Names of the RDMA devices of this machine (ibv_get_device_list); empty
  // when there is none (e.g. a kernel without InfiniBand support).
  static std::vector<std::string> DeviceNames();

  // Opens `name` ("" : the first device) and allocates a PD. On failure
  // returns INVALID_PARAMS (unknown name, no device) or TRANSFER_FAIL (verbs
  // calls failed) and writes the reason to *error when given.
  static Result<std::unique_ptr<VerbsDevice>> Open(std::string_view name,
                                                   std::string* error = nullptr);

  ~VerbsDevice();
  VerbsDevice(const VerbsDevice&) = delete;
  VerbsDevice& operator=(const VerbsDevice&) = delete;

  const std::string& name() const { return name_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const VerbsPortInfo& port() const { return port_; }

 private:
  VerbsDevice() = default;

  std::string name_;
  ibv_context* context_ = nullptr;  // owned by librdmacm
  ibv_pd* pd_ = nullptr;
  VerbsPortInfo port_;
};

// 256 -> IBV_MTU_256 ... 4096 -> IBV_MTU_4096 in bytes; 0 for other values.
uint32_t MtuBytes(ibv_mtu mtu);

}  // namespace shelfmark
