// The translation unit that builds the tests' precompiled header (ember.hpp and Catch2; see
// tests/CMakeLists.txt): the CPU tests reuse it instead of each parsing them again.
