// The Catch2 (v2, Debian 12) runner for every tests/test_*.cpp.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
