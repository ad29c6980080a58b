// The target that compiles the tests' precompiled header (cmake/PodsimHelpers.cmake,
// podsim_test_pch): an executable, so that its flags are those of the test executables that
// reuse the header. It does nothing.
int main() { return 0; }
