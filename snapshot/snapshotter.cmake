# Snapshots of the master directory: the catalog (key layout, candidates,
# retention), the fork + copy-on-write snapshotter and its child, restore.
shelfmark_library(snapshot
  SOURCES snapshot_catalog.cc snapshot_child.cc snapshotter.cc snapshot_restore.cc
  DEPS shelfmark::snapshot_codec shelfmark::snapshot_store shelfmark::directory)

shelfmark_test(snapshot_test
  SOURCES snapshot_catalog_test.cc snapshotter_test.cc snapshot_restore_test.cc
  DEPS shelfmark::snapshot
  LABELS quick
  TIMEOUT 600)
