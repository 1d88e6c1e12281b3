"""The scenario tests: the real extender binary, the harness, and one shared main()."""

load("//tools:taskgov.bzl", "taskgov_cc_test")

def scenario_test(name, size = "medium", deps = [], src = None, tags = [], env = {}):
    """An e2e test `src` (default `name`.cc) run against //extender:taskgov-extender."""
    taskgov_cc_test(
        name = name,
        size = size,
        srcs = [src or name + ".cc"],
        env = env,
        args = ["$(rootpath //extender:taskgov-extender)"],
        data = ["//extender:taskgov-extender"],
        own_main = True,
        tags = ["e2e"] + tags,
        deps = deps + [
            ":scenario_test_main",
            ":scenario_test_util",
        ],
    )
