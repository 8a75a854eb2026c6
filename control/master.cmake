list(APPEND CONTROL_SOURCES master_config.cc directory_metrics.cc)
shelfmark_binary(shelfmark-master SOURCES master_main.cc DEPS shelfmark::control)
shelfmark_test(master_config_test SOURCES master_config_test.cc DEPS shelfmark::control)
