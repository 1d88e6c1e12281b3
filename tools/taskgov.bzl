"""The project's C++ rules: every target gets the project's compiler options from here."""

TASKGOV_COPTS = [
    "-std=c++20",
    "-Wall",
    "-Wextra",
    "-Werror",
]

def taskgov_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = TASKGOV_COPTS + copts, **kwargs)

def taskgov_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = TASKGOV_COPTS + copts, **kwargs)

def taskgov_cc_test(name, copts = [], deps = [], own_main = False, **kwargs):
    """A GoogleTest test; links gtest_main unless the test brings its own main (own_main)."""
    native.cc_test(
        name = name,
        copts = TASKGOV_COPTS + copts,
        deps = deps + [
            "@googletest//:gtest" if own_main else "@googletest//:gtest_main",
            "//tools:tsan_suppressions",
        ],
        **kwargs
    )

def taskgov_cc_benchmark(name, copts = [], deps = [], tags = [], **kwargs):
    """A Google Benchmark target that prints a table; run it with `bazel run -c opt`.

    Benchmarks measure and never gate: they are binaries, not tests.
    """
    native.cc_binary(
        name = name,
        copts = TASKGOV_COPTS + copts,
        deps = deps + ["@benchmark//:benchmark_main"],
        tags = tags + ["benchmark"],
        testonly = True,
        **kwargs
    )

def taskgov_fuzz_target(name, srcs, deps = [], corpus = [], dict = None, copts = [], **kwargs):
    """A libFuzzer target (LLVMFuzzerTestOneInput); build and run it with tools/fuzz.

    It builds only under --config=fuzz (clang, sanitizers; tagged manual so `//...` with the
    default gcc toolchain skips it). `corpus` lists seed files (the package's test payloads),
    `dict` a libFuzzer dictionary; both are runfiles, which tools/fuzz copies into the run's
    corpus directory and passes as -dict=.
    """
    native.cc_binary(
        name = name,
        srcs = srcs,
        copts = TASKGOV_COPTS + copts,
        linkopts = ["-fsanitize=fuzzer"],
        deps = deps,
        data = corpus + ([dict] if dict else []),
        tags = ["fuzz", "manual"],
        testonly = True,
        **kwargs
    )
