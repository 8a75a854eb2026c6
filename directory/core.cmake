list(APPEND DIRECTORY_SOURCES
  object_metadata.cc segment_table.cc client_registry.cc
  directory.cc directory_objects.cc directory_nodes.cc directory_offload.cc eviction.cc)
shelfmark_test(directory_test
  SOURCES directory_test.cc directory_nodes_test.cc eviction_test.cc
          directory_concurrency_test.cc object_metadata_test.cc
  DEPS shelfmark::directory)
