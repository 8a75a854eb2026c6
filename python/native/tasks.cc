#include "python/native/tasks.h"

#include <optional>
#include <utility>

#include "client/client.h"

namespace shelfmark::python {
namespace {

constexpr int kInvalidParams = static_cast<int>(ErrorCode::INVALID_PARAMS);

int Code(ErrorCode code) { return static_cast<int>(code); }

}  // namespace

int CreateTask(const Store& store, const TaskSpec& spec, std::string* id) {
  Store::ClientRef ref = store.client();
  if (ref.client == nullptr) return kInvalidParams;
  auto made = ref.client->CreateTask(ref.tenant, spec);
  if (!made.ok()) return Code(made.error());
  *id = made->ToString();
  return 0;
}

int RunTask(const Store& store, const std::string& id) {
  Store::ClientRef ref = store.client();
  std::optional<UUID> uuid = UUID::Parse(id);
  if (ref.client == nullptr || !uuid) return kInvalidParams;
  return Code(ref.client->RunTask(ref.tenant, *uuid));
}

int QueryTask(const Store& store, const std::string& id, TaskInfo* out) {
  Store::ClientRef ref = store.client();
  std::optional<UUID> uuid = UUID::Parse(id);
  if (ref.client == nullptr || !uuid) return kInvalidParams;
  auto info = ref.client->QueryTask(ref.tenant, *uuid);
  if (!info.ok()) return Code(info.error());
  *out = std::move(info).value();
  return 0;
}

}  // namespace shelfmark::python
