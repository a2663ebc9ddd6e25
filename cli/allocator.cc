// The understudy server's allocator settings.
//
// The binary links jemalloc (Debian's libjemalloc), which replaces glibc's
// malloc for the whole process; the unit tests keep glibc's. A replayed
// request allocates about 160 times (the trace event's attribute map and
// copies, JSON parsing, SQLite, Asio's handlers), and its trace event is
// freed on the writer thread, not where it was allocated: with glibc's
// allocator that cost 20% of an HTTP replay's CPU (bench/run,
// docs/PERFORMANCE.md).
//
// jemalloc reads this string once, at start-up (MALLOC_CONF in the
// environment still applies on top of it):
//   narenas:2         one arena per core, as this machine has, instead of
//                     four per core: fewer half-empty arenas, a steadier RSS;
//   dirty_decay_ms:1000, muzzy_decay_ms:0
//                     freed pages go back to the system within a second
//                     instead of ten, so a burst does not stay resident;
//   background_thread:true
//                     a thread of jemalloc's returns them: without it, pages
//                     are returned only when the server allocates again, and
//                     an idle server kept most of what 40 slow clients
//                     had held (docs/PERFORMANCE.md).
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0,background_thread:true";
}
