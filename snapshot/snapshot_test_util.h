// Test helpers of the snapshot tests (TempDir: testing/temp_dir.h): a LocalStore
// in it, a directory holding every kind of state, and a text dump of a
// directory's exported state for comparisons.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "directory/shard.h"
#include "snapshot/local_store.h"
#include "testing/temp_dir.h"

namespace shelfmark::testing {

inline std::unique_ptr<LocalStore> OpenLocalStore(const std::string& base) {
  auto store = LocalStore::Open(base);
  if (!store.ok()) {
    ADD_FAILURE() << "LocalStore::Open(" << base << "): " << ErrorCodeName(store.error());
    return nullptr;
  }
  return std::move(*store);
}

// A Directory on `clock` without its background thread.
inline std::unique_ptr<Directory> MakeDirectory(const Clock* clock, bool enable_offload = true) {
  DirectoryOptions o;
  o.enable_offload = enable_offload;
  return MakeTestDirectory(clock, o);
}

inline Segment TestSegment(const std::string& name, uint64_t base, uint64_t size = 1 << 20) {
  // The rkey holds a NUL byte: binary bytes survive.
  return MakeTestSegment(name, base, size, name + ":4000", std::string("rkey\0", 5) + name);
}

// The parties of PopulateEveryKindOfState.
struct PopulatedState {
  UUID node_a, node_b, writer;
  std::vector<std::string> complete_keys;  // default tenant, all COMPLETE
  std::string unfinished_key;              // PutStart without PutEnd
};

inline void ExpectOk(ErrorCode rc, const char* what) {
  EXPECT_EQ(rc, ErrorCode::OK) << what;
}

// Fills `d` with every kind of state a snapshot carries: two nodes with
// three segments and holes in their allocators, a local disk with queued
// and in-flight offload tasks, LOCAL_DISK replicas (one object known only
// from disk), two tenants, checksums, data types, hard and soft pins,
// groups, two-replica objects, live and expired leases and an unfinished
// put. `clock` moves by whole seconds only.
inline PopulatedState PopulateEveryKindOfState(Directory& d, ManualClock& clock) {
  PopulatedState p{UUID::Generate(), UUID::Generate(), UUID::Generate(), {}, "unfinished"};
  ExpectOk(d.MountSegment(p.node_a, TestSegment("a1", 0x100000)), "mount a1");
  ExpectOk(d.MountSegment(p.node_a, TestSegment("a2", 0x400000)), "mount a2");
  ExpectOk(d.MountSegment(p.node_b, TestSegment("b1", 0x100000, 2 << 20)), "mount b1");
  ExpectOk(d.MountLocalDisk(p.node_a, true, "a:5000"), "disk a");
  ExpectOk(d.MountLocalDisk(p.node_b, false, "b:5000"), "disk b");
  auto put = [&](const std::string& tenant, const std::string& key, uint64_t size,
                 PutConfig c = {}) {
    auto started = d.PutStart(p.writer, tenant, key, size, c);
    ASSERT_TRUE(started.ok()) << key << ": " << ErrorCodeName(started.error());
    ExpectOk(d.PutEnd(p.writer, tenant, key), key.c_str());
    if (tenant.empty()) p.complete_keys.push_back(key);
  };
  for (int i = 0; i < 40; ++i) put("", "plain-" + std::to_string(i), 1000 + 37 * i);
  PutConfig rich;
  rich.checksum = 0xfeedfacecafebeefULL;
  rich.data_type = DataType::KVCACHE;
  rich.replica_num = 2;
  put("", "two-replicas", 5000, rich);
  PutConfig pinned;
  pinned.hard_pin = true;
  pinned.data_type = DataType::WEIGHT;
  put("", "hard-pinned", 3000, pinned);
  PutConfig soft;
  soft.soft_pin_ttl_ms = 60'000;
  put("", "soft-pinned", 3000, soft);
  PutConfig grouped;
  grouped.group_id = "g1";
  put("", "member-1", 100, grouped);
  put("", "member-2", 100, grouped);
  put("t2", "other-tenant", 2000, rich);
  put("t2", "other-member", 100, grouped);
  // Holes in the allocators.
  for (int i = 0; i < 40; i += 3) {
    std::string key = "plain-" + std::to_string(i);
    ExpectOk(d.Remove("", key, true), "remove");
    std::erase(p.complete_keys, key);
  }
  // Offload: some tasks handed out (in flight), the rest stay queued.
  auto tasks = d.OffloadHeartbeat(p.node_a, 3);
  EXPECT_TRUE(tasks.ok());
  OffloadedObject disk_only{"", "disk-only", {7, 4096, 9, 1234, "a:5000"}};
  OffloadedObject offloaded{"", "plain-1", {8, 0, 7, 1000 + 37, "a:5000"}};
  auto notified = d.NotifyOffloadSuccess(p.node_a, {disk_only, offloaded});
  EXPECT_TRUE(notified.ok());
  p.complete_keys.push_back("disk-only");
  // An expired lease: read, then let it lapse; a live one: read last.
  EXPECT_TRUE(d.GetReplicaList("", "plain-2").ok());
  clock.AdvanceMs(30'000);
  EXPECT_TRUE(d.GetReplicaList("", "plain-4").ok());
  EXPECT_TRUE(d.PutStart(p.writer, "", p.unfinished_key, 4000, {}).ok());
  return p;
}

// Every field of a directory's exported state, one line per item, for
// EXPECT_EQ comparisons with readable diffs. Call on a quiescent directory.
inline std::string DumpObjects(const Directory& d) {
  std::vector<std::string> items;  // sorted: map order inside a shard is not state
  for (uint32_t i = 0; i < kShardCount; ++i) {
    ShardState s = d.ExportShard(i);
    for (const ObjectState& o : s.objects) {
      std::string item = "shard " + std::to_string(i) + " object " + o.tenant + "/" + o.key +
                         " writer=" + o.writer.ToString() + " size=" + std::to_string(o.size) +
                         " checksum=" + (o.has_checksum ? std::to_string(o.checksum) : "-") +
                         " type=" + std::to_string(static_cast<int>(o.data_type)) +
                         " hard=" + std::to_string(o.hard_pin) +
                         " lease=" + std::to_string(o.lease_remaining_ms) +
                         " soft=" + std::to_string(o.soft_pin_remaining_ms) +
                         " age=" + std::to_string(o.put_age_ms) + " group=" + o.group + "\n";
      for (const ReplicaState& r : o.replicas) {
        item += "  replica " + std::to_string(r.id) + " " + ReplicaStatusName(r.status) + " " +
                ReplicaTypeName(r.type) + " owner=" + r.owner.ToString() +
                " offset=" + std::to_string(r.offset) + "\n";
      }
      items.push_back(std::move(item));
    }
    for (const GroupState& g : s.groups) {
      std::string item = "shard " + std::to_string(i) + " group " + g.tenant + "/" + g.group + ":";
      for (const std::string& m : g.members) item += " " + m;
      items.push_back(item + "\n");
    }
  }
  std::sort(items.begin(), items.end());
  std::string out;
  for (const std::string& item : items) out += item;
  return out;
}

inline std::string DumpSegmentsAndTasks(const Directory& d) {
  SegmentsState s = d.ExportSegments();
  std::string out = "view " + std::to_string(s.view_version) + "\n";
  for (const SegmentState& g : s.segments) {
    out += "segment " + g.segment.id.ToString() + " owner=" + g.owner.ToString() + " " +
           g.segment.name + " base=" + std::to_string(g.segment.base) +
           " size=" + std::to_string(g.segment.size) + " " + g.segment.endpoint + " " +
           g.segment.protocol + " rkey=" + std::to_string(g.segment.rkey.size()) + ":" +
           g.segment.rkey + " align=" + std::to_string(g.alignment) + " free:";
    for (const auto& [off, len] : g.free_extents) {
      out += " " + std::to_string(off) + "+" + std::to_string(len);
    }
    out += "\n";
  }
  for (const DiskNodeState& k : s.disks) {
    out += "disk " + k.client.ToString() + " " + k.endpoint + " offload=" +
           std::to_string(k.enable_offloading) + "\n";
  }
  for (const PendingOffloadState& p : d.ExportTasks().offloads) {
    out += "tasks " + p.client.ToString() + ":";
    for (const OffloadTask& t : p.tasks) {
      out += " " + t.tenant + "/" + t.key + "(" + std::to_string(t.size) + ")";
    }
    out += "\n";
  }
  return out;
}

}  // namespace shelfmark::testing
