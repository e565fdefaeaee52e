// The translation unit that builds the tests' precompiled header (tests/CMakeLists.txt); it
// holds nothing of its own.
