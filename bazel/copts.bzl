"""Compiler flags shared by the project's own targets.

Mirrors the `understudy_warnings` interface target of the CMake build; the
generated protobuf code (//proto) does not get them, as in CMake.
"""

UNDERSTUDY_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
]
