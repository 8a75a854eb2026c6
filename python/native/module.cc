// _shelfmark: the native module under both Python packages (shelfmark and
// mooncake.store). It binds python/native/store.h declaratively: every call
// that waits (master RPCs, transfers) runs with the GIL released; Python
// buffers are pinned (Py_buffer held) for the whole call. Argument parsing,
// configuration and exceptions are the Python layers' (python/shelfmark,
// python/mooncake).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error_code.h"
#include "python/native/service_store.h"
#include "python/native/tasks.h"
#include "python/native/store.h"
#include "storeservice/host_mem_allocator.h"
#include "storeservice/sessions.h"
#include "transport/rdma_plugin.h"

namespace py = pybind11;

namespace shelfmark::python {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;
using storeservice::Sessions;

// An object's bytes held by Python: bytes, bytearray, memoryview, numpy
// arrays, anything with the buffer protocol (C-contiguous).
struct PinnedBuffers {
  std::vector<py::buffer_info> infos;
  std::vector<const char*> datas;
  std::vector<uint64_t> sizes;

  static PinnedBuffers Of(const py::handle& buffer) {
    PinnedBuffers pinned;
    pinned.Add(buffer);
    return pinned;
  }
  template <typename List>
  static PinnedBuffers OfAll(const List& buffers) {
    PinnedBuffers pinned;
    pinned.infos.reserve(py::len(buffers));
    for (const py::handle& b : buffers) pinned.Add(b);
    return pinned;
  }
  void Add(const py::handle& b) {
    // PyBUF_C_CONTIGUOUS: a strided view raises BufferError (never read wrong).
    auto view = std::make_unique<Py_buffer>();
    if (PyObject_GetBuffer(b.ptr(), view.get(), PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      throw py::error_already_set();
    }
    const uint64_t len = static_cast<uint64_t>(view->len);
    infos.emplace_back(view.release(), /*ownview=*/true);  // releases and deletes it
    datas.push_back(static_cast<const char*>(infos.back().ptr));
    sizes.push_back(len);
  }
};

// A value read with get_buffer: owns its bytes, shows them through the
// buffer protocol (zero-copy for numpy.frombuffer, memoryview, ...).
struct BufferHandle {
  std::string bytes;
  uint64_t ptr() const { return reinterpret_cast<uint64_t>(bytes.data()); }
  uint64_t size() const { return bytes.size(); }
};

// (code, id) of a call, made without the GIL, that names what it made.
template <typename Call>
py::tuple CodeAndId(Call&& call) {
  std::string id;
  int rc;
  {
    py::gil_scoped_release release;
    rc = call(&id);
  }
  return py::make_tuple(rc, id);
}

// put(key, buffer, config) and get(key) -> (code, bytes) of either store
// shape (Store, ServiceStore): the buffer pinned, the call without the GIL.
template <typename S>
int PutBytes(S& s, const std::string& key, const py::buffer& value, const PutConfig& config) {
  PinnedBuffers pinned = PinnedBuffers::Of(value);
  py::gil_scoped_release release;
  return s.Put(key, pinned.datas[0], pinned.sizes[0], config);
}

template <typename S>
py::tuple GetBytes(S& s, const std::string& key) {
  std::string value;
  int rc;
  {
    py::gil_scoped_release release;
    rc = s.Get(key, &value);
  }
  return py::make_tuple(rc, py::bytes(value));
}

template <typename S>
int PutParts(S& s, const std::string& key, const PutConfig& config, const py::args& parts) {
  PinnedBuffers pinned = PinnedBuffers::OfAll(parts);
  py::gil_scoped_release release;
  return s.PutParts(key, pinned.datas, pinned.sizes, config);
}

template <typename S>
std::vector<int> PutBatch(S& s, const std::vector<std::string>& keys, const py::sequence& values,
                          const PutConfig& config) {
  PinnedBuffers pinned = PinnedBuffers::OfAll(values);
  py::gil_scoped_release release;
  return s.PutBatch(keys, pinned.datas, pinned.sizes, config);
}

template <typename S>
py::tuple GetBuffer(S& s, const std::string& key) {
  auto handle = std::make_shared<BufferHandle>();
  int rc;
  {
    py::gil_scoped_release release;
    rc = s.Get(key, &handle->bytes);
  }
  py::object value = rc == 0 ? py::cast(handle) : py::object(py::none());
  return py::make_tuple(rc, value);
}

// (codes, values) of get_batch; `as_handles`: each value a BufferHandle (None
// where its code is not 0), else bytes.
template <typename S>
py::tuple GetBatch(S& s, const std::vector<std::string>& keys, bool as_handles) {
  std::vector<std::string> values;
  std::vector<int> codes;
  {
    py::gil_scoped_release release;
    codes = s.GetBatch(keys, &values);
  }
  py::list out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!as_handles) {
      out.append(py::bytes(values[i]));
    } else if (codes[i] != 0) {
      out.append(py::none());
    } else {
      auto handle = std::make_shared<BufferHandle>();
      handle->bytes = std::move(values[i]);
      out.append(py::cast(handle));
    }
  }
  return py::make_tuple(codes, out);
}

template <typename S>
py::tuple GetReplicas(S& s, const std::string& key) {
  std::vector<ReplicaInfo> replicas;
  int rc;
  {
    py::gil_scoped_release release;
    rc = s.GetReplicas(key, &replicas);
  }
  return py::make_tuple(rc, replicas);
}

// The copy and move task calls of either store shape: `create(spec, &id)`,
// `query(id, &info)` without the GIL.
template <typename Create>
py::tuple CreateTaskCall(int type, const std::string& key, const std::string& source,
                         const std::vector<std::string>& targets, Create create) {
  if (type != 0 && type != 1)
    return py::make_tuple(static_cast<int>(ErrorCode::INVALID_PARAMS), "");
  const TaskSpec spec{static_cast<TaskType>(type), key, source, targets};
  return CodeAndId([&](std::string* id) { return create(spec, id); });
}

template <typename Query>
py::tuple QueryTaskCall(const std::string& id, Query query) {
  TaskInfo info;
  int rc;
  {
    py::gil_scoped_release release;
    rc = query(id, &info);
  }
  if (rc != 0) return py::make_tuple(rc, py::none());
  py::dict d;
  d["id"] = info.id.ToString();
  d["type"] = static_cast<int>(info.type);
  d["status"] = static_cast<int>(info.status);
  d["key"] = info.key;
  d["source"] = info.source;
  d["targets"] = info.targets;
  d["created_at_ms_epoch"] = info.created_at_ms_epoch;
  d["last_updated_at_ms_epoch"] = info.last_updated_at_ms_epoch;
  d["assigned_client"] = info.assigned_client.ToString();
  d["error"] = static_cast<int>(info.error);
  d["message"] = info.message;
  return py::make_tuple(0, py::object(d));
}

py::dict ErrorCodes() {
  py::dict codes;
  for (int v = 0; v >= -10000; --v) {  // every value of the enum (common/error_code.h)
    const ErrorCode code = ErrorCodeFromInt(v);
    if (code == ErrorCode::OK && v != 0) continue;
    if (code == ErrorCode::INTERNAL_ERROR && v != -1) continue;
    codes[py::str(std::string(ErrorCodeName(code)))] = v;
  }
  return codes;
}

}  // namespace
}  // namespace shelfmark::python

PYBIND11_MODULE(_shelfmark, m) {
  using namespace shelfmark;          // NOLINT
  using namespace shelfmark::python;  // NOLINT
  m.doc() = "Shelfmark's native store (python/native/store.h)";
  m.def("error_codes", &ErrorCodes, "{name: value} of every ErrorCode");
  m.def("error_name", [](int code) { return std::string(ErrorCodeName(ErrorCodeFromInt(code))); });
  m.def("buffer_address", [](const py::buffer& b, bool writable) {
    PinnedBuffers pinned = PinnedBuffers::Of(b);
    if (writable && pinned.infos[0].readonly) throw py::value_error("the buffer is read-only");
    return py::make_tuple(reinterpret_cast<uint64_t>(pinned.datas[0]), pinned.sizes[0]);
  }, py::arg("buffer"), py::arg("writable") = false,
     "(address, nbytes) of a C-contiguous buffer (the caller keeps it alive)");

  py::class_<PutConfig>(m, "PutConfig")
      .def(py::init<>())
      .def_readwrite("replica_num", &PutConfig::replica_num)
      .def_readwrite("preferred_segments", &PutConfig::preferred_segments)
      .def_readwrite("hard_pin", &PutConfig::hard_pin)
      .def_readwrite("soft_pin_ttl_ms", &PutConfig::soft_pin_ttl_ms)
      .def_readwrite("group_id", &PutConfig::group_id)
      .def_readwrite("prefer_host", &PutConfig::prefer_host)
      .def_readwrite("replace", &PutConfig::replace);

  py::class_<StoreOptions>(m, "StoreOptions")
      .def(py::init<>())
      .def_readwrite("master", &StoreOptions::master)
      .def_readwrite("cluster_id", &StoreOptions::cluster_id)
      .def_readwrite("follow_leader_hints", &StoreOptions::follow_leader_hints)
      .def_readwrite("protocol", &StoreOptions::protocol)
      .def_readwrite("device", &StoreOptions::device)
      .def_readwrite("local_hostname", &StoreOptions::local_hostname)
      .def_readwrite("tenant", &StoreOptions::tenant)
      .def_readwrite("cluster_token", &StoreOptions::cluster_token)
      .def_readwrite("master_token", &StoreOptions::master_token)
      .def_readwrite("local_buffer_bytes", &StoreOptions::local_buffer_bytes)
      .def_readwrite("global_segment_bytes", &StoreOptions::global_segment_bytes)
      .def_readwrite("rpc_timeout_ms", &StoreOptions::rpc_timeout_ms)
      .def_readwrite("transfer_timeout_ms", &StoreOptions::transfer_timeout_ms)
      .def_readwrite("check_master", &StoreOptions::check_master)
      .def_readwrite("http_server", &StoreOptions::http_server)
      .def_readwrite("http_port", &StoreOptions::http_port)
      .def_readwrite("enable_ssd_offload", &StoreOptions::enable_ssd_offload)
      .def_readwrite("ssd_offload_path", &StoreOptions::ssd_offload_path);

  py::class_<ReplicaInfo>(m, "ReplicaInfo")
      .def_readonly("status", &ReplicaInfo::status)
      .def_readonly("memory", &ReplicaInfo::memory)
      .def_readonly("endpoint", &ReplicaInfo::endpoint)
      .def_readonly("protocol", &ReplicaInfo::protocol)
      .def_readonly("buffer_address", &ReplicaInfo::buffer_address)
      .def_readonly("size", &ReplicaInfo::size)
      .def_readonly("segment_id", &ReplicaInfo::segment_id);

  py::class_<BufferHandle, std::shared_ptr<BufferHandle>>(m, "BufferHandle", py::buffer_protocol())
      .def("ptr", &BufferHandle::ptr)
      .def("size", &BufferHandle::size)
      .def("__len__", &BufferHandle::size)
      .def_buffer([](BufferHandle& h) {
        return py::buffer_info(h.bytes.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(h.bytes.size())}, {1}, /*readonly=*/true);
      });

  py::class_<Store>(m, "NativeStore")
      .def(py::init([] { return std::make_unique<Store>(LinkedRdmaPlugin()); }))
      .def("setup", &Store::Setup, Release())
      .def("close", &Store::Close, Release())
      .def("is_open", &Store::is_open)
      .def("hostname", &Store::hostname)
      .def("listen_ip", &Store::listen_ip)
      .def("http_port", &Store::http_port)
      .def("global_segment_bytes", &Store::global_segment_bytes)
      .def("health_check", &Store::HealthCheck, Release())
      // writes
      .def("put", &PutBytes<Store>)
      .def("put_parts", &PutParts<Store>)
      .def("put_batch", &PutBatch<Store>)
      .def("put_from", &Store::PutFrom, Release())
      .def("batch_put_from", &Store::BatchPutFrom, Release())
      .def("batch_put_from_multi_buffers", &Store::BatchPutFromMultiBuffers, Release())
      // reads
      .def("get", &GetBytes<Store>)
      .def("get_buffer", &GetBuffer<Store>)
      .def("get_batch",
           [](Store& s, const std::vector<std::string>& k) { return GetBatch(s, k, false); })
      .def("batch_get_buffer",
           [](Store& s, const std::vector<std::string>& k) { return GetBatch(s, k, true); })
      .def("get_into", &Store::GetInto, Release())
      .def("batch_get_into", &Store::BatchGetInto, Release())
      .def("batch_get_into_multi_buffers", &Store::BatchGetIntoMultiBuffers, Release())
      .def("get_into_ranges", &Store::GetIntoRanges, Release())
      // registered memory
      .def("register_buffer", &Store::RegisterBuffer, Release())
      .def("unregister_buffer", &Store::UnregisterBuffer, Release())
      .def("is_registered", &Store::IsRegistered)
      // metadata
      .def("is_exist", &Store::IsExist, Release())
      .def("batch_is_exist", &Store::BatchIsExist, Release())
      .def("get_size", &Store::GetSize, Release())
      .def("get_replicas", &GetReplicas<Store>)
      .def("remove", &Store::Remove, Release())
      .def("batch_remove", &Store::BatchRemove, Release())
      .def("local_copies", &Store::LocalCopies)
      .def("disk_stats", &Store::DiskStats)
      .def("time_batch_get_into", &Store::TimeBatchGetInto, Release())
      .def("time_put_from", &Store::TimePutFrom, Release())
      .def("time_get_into", &Store::TimeGetInto, Release())
      .def("time_is_exist", &Store::TimeIsExist, Release())
      .def("remove_all", &Store::RemoveAll, Release())
      .def("remove_by_regex", &Store::RemoveByRegex, py::arg("pattern"), py::arg("force") = false,
           Release())
      // segments
      .def("allocate_and_mount_segment",
           [](Store& s, uint64_t size, const std::string& protocol) {
             return CodeAndId(
                 [&](std::string* id) { return s.AllocateAndMountSegment(size, protocol, id); });
           })
      .def("unmount_and_free_segments", &Store::UnmountAndFreeSegments, py::arg("segment_ids"),
           py::arg("grace_ms") = 0, Release())
      .def("mount_segment",
           [](Store& s, const std::string& path, uint64_t offset, uint64_t size,
              const std::string& protocol) {
             return CodeAndId(
                 [&](std::string* id) { return s.MountSegment(path, offset, size, protocol, id); });
           })
      .def("unmount_segments", &Store::UnmountSegments, py::arg("segment_ids"),
           py::arg("grace_ms") = 0, Release())
      // copy and move tasks (python/native/tasks.h): type 0 copy, 1 move
      .def("create_task",
           [](Store& s, int type, const std::string& key, const std::string& source,
              const std::vector<std::string>& targets) {
             return CreateTaskCall(
                 type, key, source, targets,
                 [&](const TaskSpec& spec, std::string* id) { return CreateTask(s, spec, id); });
           })
      .def(
          "run_task", [](Store& s, const std::string& id) { return RunTask(s, id); }, Release())
      .def("query_task", [](Store& s, const std::string& id) {
        return QueryTaskCall(
            id, [&](const std::string& i, TaskInfo* info) { return QueryTask(s, i, info); });
      });

  // Mooncake's put and get sessions over a NativeStore (kept alive by them).
  // The standalone-store shape (python/native/service_store.h): the same
  // calls, through the host's store service.
  py::class_<ServiceStoreOptions>(m, "ServiceStoreOptions")
      .def(py::init<>())
      .def_readwrite("server_address", &ServiceStoreOptions::server_address)
      .def_readwrite("cluster_token", &ServiceStoreOptions::cluster_token)
      .def_readwrite("tenant", &ServiceStoreOptions::tenant)
      .def_readwrite("timeout_ms", &ServiceStoreOptions::timeout_ms);
  py::class_<ServiceStore>(m, "NativeServiceStore")
      .def(py::init<>())
      .def("setup", &ServiceStore::Setup, Release())
      .def("close", &ServiceStore::Close, Release())
      .def("is_open", &ServiceStore::is_open)
      .def("hostname", &ServiceStore::hostname)
      .def("listen_ip", [](const ServiceStore&) { return std::string(); })
      .def("health_check", &ServiceStore::HealthCheck, Release())
      .def("put", &PutBytes<ServiceStore>)
      .def("put_from", &ServiceStore::PutFrom, Release())
      .def("batch_put_from", &ServiceStore::BatchPutFrom, Release())
      .def("batch_put_from_multi_buffers", &ServiceStore::BatchPutFromMultiBuffers, Release())
      .def("get", &GetBytes<ServiceStore>)
      .def("get_into", &ServiceStore::GetInto, Release())
      .def("batch_get_into", &ServiceStore::BatchGetInto, Release())
      .def("batch_get_into_multi_buffers", &ServiceStore::BatchGetIntoMultiBuffers, Release())
      .def("register_buffer", &ServiceStore::RegisterBuffer, Release())
      .def("unregister_buffer", &ServiceStore::UnregisterBuffer, Release())
      .def("is_registered", &ServiceStore::IsRegistered)
      .def("is_exist", &ServiceStore::IsExist, Release())
      .def("batch_is_exist", &ServiceStore::BatchIsExist, Release())
      .def("get_size", &ServiceStore::GetSize, Release())
      .def("remove", &ServiceStore::Remove, Release())
      .def("batch_remove", &ServiceStore::BatchRemove, Release())
      .def("put_parts", &PutParts<ServiceStore>)
      .def("put_batch", &PutBatch<ServiceStore>)
      .def("get_buffer", &GetBuffer<ServiceStore>)
      .def("get_batch",
           [](ServiceStore& s, const std::vector<std::string>& k) { return GetBatch(s, k, false); })
      .def("batch_get_buffer",
           [](ServiceStore& s, const std::vector<std::string>& k) { return GetBatch(s, k, true); })
      .def("get_into_ranges", &ServiceStore::GetIntoRanges, Release())
      .def("get_replicas", &GetReplicas<ServiceStore>)
      .def("remove_all", &ServiceStore::RemoveAll, Release())
      .def("remove_by_regex", &ServiceStore::RemoveByRegex, py::arg("pattern"),
           py::arg("force") = false, Release())
      .def("create_task",
           [](ServiceStore& s, int type, const std::string& key, const std::string& source,
              const std::vector<std::string>& targets) {
             return CreateTaskCall(
                 type, key, source, targets,
                 [&](const TaskSpec& spec, std::string* id) { return s.CreateTask(spec, id); });
           })
      .def("run_task", &ServiceStore::RunTask, Release())
      // NativeSessions' calls, held by the service for this connection.
      .def("put_start", &ServiceStore::PutStart, Release())
      .def("put_ranges", &ServiceStore::PutRanges, Release())
      .def("put_end", &ServiceStore::PutEnd, Release())
      .def("put_revoke", &ServiceStore::PutRevoke, Release())
      .def("get_start", &ServiceStore::GetStart, Release())
      .def("get_ranges", &ServiceStore::GetRanges, Release())
      .def("get_end", &ServiceStore::GetEnd, Release())
      .def("query_task", [](ServiceStore& s, const std::string& id) {
        return QueryTaskCall(
            id, [&](const std::string& i, TaskInfo* info) { return s.QueryTask(i, info); });
      });
  // Mooncake's MooncakeHostMemAllocator (storeservice/host_mem_allocator.h).
  m.def("alloc_shm", &storeservice::AllocShm, "sealed memfd memory; its address, or 0");
  m.def("free_shm", &storeservice::FreeShm, "frees alloc_shm's memory; False if not one");

  py::class_<Sessions>(m, "NativeSessions")
      .def(py::init([](Store* s) {
             return std::make_unique<Sessions>([s] {
               Store::ClientRef r = s->client();
               return storeservice::SessionClient{r.keep, r.client, r.tenant};
             });
           }),
           py::keep_alive<1, 2>())
      .def("put_start", &Sessions::PutStart, Release())
      .def("put_ranges", &Sessions::PutRanges, Release())
      .def("put_end", &Sessions::PutEnd, Release())
      .def("put_revoke", &Sessions::PutRevoke, Release())
      .def("get_start", &Sessions::GetStart, Release())
      .def("get_ranges", &Sessions::GetRanges, Release())
      .def("get_end", &Sessions::GetEnd, Release());
}
