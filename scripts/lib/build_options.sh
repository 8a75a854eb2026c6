# shellcheck shell=bash
# The CMake options of the trees scripts/test.sh builds (source it; not a
# script): warnings are errors. scripts/demo.sh and the benchmarks build the
# RelWithDebInfo tree with them too (scripts/lib/cluster.sh, build_tree), so
# README's two commands, the demo then the test suite, compile that tree
# once (another option would change every compile command). A build by hand
# (scripts/build.sh alone) leaves warnings warnings (README).
# shellcheck disable=SC2034  # for the sourcing script
suite_cmake_options=(-DSHELFMARK_WERROR=ON)
