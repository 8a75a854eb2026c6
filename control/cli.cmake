# shelfmark-cli: the operator's view of the directory (stat, ls, count, rm).
# Deferred to the end of control/ so it runs after the control library is
# defined below the fragment includes; skipped while that library does not
# exist yet (early in the project), so the rest of the tree still configures.
function(shelfmark_add_cli)
  if(TARGET shelfmark::control)
    shelfmark_binary(shelfmark-cli SOURCES cli_main.cc DEPS shelfmark::control shelfmark::perfutil)
  endif()
endfunction()
cmake_language(DEFER CALL shelfmark_add_cli)
