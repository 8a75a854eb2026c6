# The SSD store's file layer: PosixFileIo, FaultyFileIo (fault injection and
# power cuts for tests) and the environment configuration.
shelfmark_library(ssdstore_io
  SOURCES file_io.cc fault_file_io.cc storage_config.cc
  DEPS shelfmark::common)

shelfmark_test(ssdstore_io_test
  SOURCES file_io_test.cc fault_file_io_test.cc storage_config_test.cc
  DEPS shelfmark::ssdstore_io
  LABELS quick)
