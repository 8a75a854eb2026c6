# LOCAL_DISK reads: the backend factory (StorageConfig -> backend), the wire
# format, the node's read service and the client call (UCX active messages).
shelfmark_library(ssdstore_localdisk
  SOURCES storage_backend_factory.cc local_disk_wire.cc local_disk_service.cc local_disk_client.cc
  DEPS shelfmark::ssdstore_bucket shelfmark::ssdstore_offset shelfmark::transport)

shelfmark_test(local_disk_test SOURCES local_disk_test.cc
  DEPS shelfmark::ssdstore_localdisk LABELS quick TIMEOUT 120)
