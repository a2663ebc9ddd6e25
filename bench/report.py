#!/usr/bin/env python3
"""bench/report.py FIGURES: the table bench/run prints.

FIGURES holds one key=value line per figure (medians of the rounds, RSS in
kB, times in microseconds unless the key says ms; KEY_lo and KEY_hi are
the lowest and highest of the rounds). A case whose figures are
missing (not run: --cases, --peers) gets no row. Each row: the case, what
understudy did, what it was compared with, the ratio, the target from the
performance contract, and ok or MISSED.
"""
import sys


def main(path):
    f = {}
    with open(path) as lines:
        for line in lines:
            key, _, value = line.strip().partition("=")
            if key and value:
                f[key] = float(value)

    def have(*keys):
        return all(k in f for k in keys)

    rows = []

    def row(case, ours, base, ratio, target, ok):
        rows.append((case, ours, base, ratio, target, "" if ok is None else ("ok" if ok else "MISSED")))

    def unserved(server, conns=16):
        """", N of CONNS connections unserved" when the server left any unanswered."""
        n = int(f.get(f"{server}_unserved", 0))
        return f", {n} of {conns} connections unserved" if n else ""

    def ratio_row(case, ours, base, r, minimum=None):
        """A row whose figure is the ratio r; met when r >= minimum (None: informational)."""
        if minimum is None:
            row(case, ours, base, f"{r:.2f}x", "(informational)", None)
        else:
            row(case, ours, base, f"{r:.2f}x", f">= {minimum:.2f}x", r >= minimum)

    def spread(key, scale=1.0, fmt="{:.2f}"):
        """" (lo–hi)": the key's range over the rounds, when there were several."""
        if not have(f"{key}_lo", f"{key}_hi") or f[f"{key}_lo"] == f[f"{key}_hi"]:
            return ""
        return f" ({fmt.format(f[key + '_lo'] * scale)}–{fmt.format(f[key + '_hi'] * scale)})"

    if have("grpc_rps", "echo_rps"):
        ratio_row("gRPC replay (unary)", f"{f['grpc_rps']:,.0f} req/s, p99 {f['grpc_p99'] / 1000:.1f} ms",
                  f"echo {f['echo_rps']:,.0f} req/s", f["grpc_rps"] / f["echo_rps"], 0.7)
    if have("rules_rps", "grpc_rps"):
        ratio_row("gRPC replay, 1,000 rules", f"{f['rules_rps']:,.0f} req/s",
                  f"replay {f['grpc_rps']:,.0f} req/s", f["rules_rps"] / f["grpc_rps"], 0.5)
    if have("stream_chunks", "echo_chunks"):
        ratio_row("gRPC stream replay, 200 chunks",
                  f"{f['stream_chunks']:,.0f} chunks/s, first {f['stream_ttfc'] / 1000:.2f} ms",
                  f"echo {f['echo_chunks']:,.0f} chunks/s, first {f['echo_ttfc'] / 1000:.2f} ms",
                  f["stream_chunks"] / f["echo_chunks"])
    if have("http_rps", "httplib_rps"):
        r = f["http_rps"] / f["httplib_rps"]
        row("HTTP replay /v1/chat/completions",
            f"{f['http_rps']:,.0f} req/s, p50 {f['http_p50'] / 1000:.2f} p99 {f['http_p99'] / 1000:.2f} ms",
            f"httplib {f['httplib_rps']:,.0f} req/s, p99 {f['httplib_p99'] / 1000:.2f} ms{unserved('httplib')}",
            f"{r:.2f}x",
            ">= 0.70x, p99 <= 2 ms", r >= 0.7 and f["http_p99"] <= 2000)
    if have("http_rate", "http_rate_p99", "httplib_rate_p99"):
        # Open loop at half the bare handler's closed-loop rate of the same
        # round: latency below saturation, from each request's due time.
        row(f"HTTP replay at {f['http_rate']:,.0f} req/s (open loop, 50%)",
            f"p50 {f['http_rate_p50'] / 1000:.2f} p99 {f['http_rate_p99'] / 1000:.2f}"
            f"{spread('http_rate_p99', 1 / 1000)} ms",
            f"httplib p50 {f['httplib_rate_p50'] / 1000:.2f} p99 {f['httplib_rate_p99'] / 1000:.2f}"
            f"{spread('httplib_rate_p99', 1 / 1000)} ms",
            f"{f['http_rate_p99'] / f['httplib_rate_p99']:.2f}x p99", "(informational)", None)
    for peer, name, target in (("aimock", "aimock", 2.5), ("wiremock", "WireMock", 2.0)):
        if have("http_rps", f"{peer}_rps"):
            ratio_row(f"HTTP replay vs {name}", f"{f['http_rps']:,.0f} req/s",
                      f"{name} {f[peer + '_rps']:,.0f} req/s, p99 {f[peer + '_p99'] / 1000:.1f} ms"
                      f"{unserved(peer)}", f["http_rps"] / f[f"{peer}_rps"], target)
    if have("sse_chunks", "httplib_sse"):
        ratio_row("SSE replay, 200 events",
                  f"{f['sse_chunks']:,.0f} chunks/s, first {f['sse_ttfc'] / 1000:.2f} ms",
                  f"httplib {f['httplib_sse']:,.0f} chunks/s, first {f['httplib_sse_ttfc'] / 1000:.2f} ms",
                  f["sse_chunks"] / f["httplib_sse"])
    for peer, name, target in (("aimock", "aimock", 2.5), ("wiremock", "WireMock", None)):
        if have("sse_chunks", f"{peer}_sse"):
            ratio_row(f"SSE replay vs {name}", f"{f['sse_chunks']:,.0f} chunks/s",
                      f"{name} {f[peer + '_sse']:,.0f} chunks/s, first {f[peer + '_sse_ttfc'] / 1000:.2f} ms",
                      f["sse_chunks"] / f[f"{peer}_sse"], target)
    if have("sse_short", "httplib_sse_short"):
        ratio_row("SSE replay, 11 events",
                  f"{f['sse_short']:,.0f} events/s, first {f['sse_short_ttfc'] / 1000:.2f} ms",
                  f"httplib {f['httplib_sse_short']:,.0f} events/s, first "
                  f"{f['httplib_sse_short_ttfc'] / 1000:.2f} ms{unserved('httplib_sse_short')}",
                  f["sse_short"] / f["httplib_sse_short"])
    if have("sse_short", "aimock_sse_short"):
        # The ratio is the median of each round's, with its range.
        r = f.get("sse_short_aimock_ratio", f["sse_short"] / f["aimock_sse_short"])
        row("SSE replay, 11 events, vs aimock", f"{f['sse_short']:,.0f} events/s",
            f"aimock {f['aimock_sse_short']:,.0f} events/s, first {f['aimock_sse_short_ttfc'] / 1000:.2f} ms",
            f"{r:.2f}x{spread('sse_short_aimock_ratio')}", ">= 2.50x", r >= 2.5)
    if have("sse_short", "wiremock_sse_short"):
        ratio_row("SSE replay, 11 events, vs WireMock", f"{f['sse_short']:,.0f} events/s",
                  f"WireMock {f['wiremock_sse_short']:,.0f} events/s, first "
                  f"{f['wiremock_sse_short_ttfc'] / 1000:.2f} ms", f["sse_short"] / f["wiremock_sse_short"])
    # The framed streams (ndjson, eventstream, a2a): the ratio is the median of
    # each round's, with its range.
    for case, name in (("ndjson", "NDJSON stream replay (Ollama), 200 lines"),
                       ("eventstream", "Event stream replay (Bedrock), 200 frames"),
                       ("a2a", "A2A stream replay (SendStreamingMessage), 200 events")):
        if not have(case, f"httplib_{case}", f"{case}_ratio"):
            continue
        r = f[f"{case}_ratio"]
        row(name,
            f"{f[case]:,.0f}{spread(case, fmt='{:,.0f}')} events/s, first {f[case + '_ttfc'] / 1000:.2f} ms",
            f"httplib {f['httplib_' + case]:,.0f}{spread('httplib_' + case, fmt='{:,.0f}')} events/s, first "
            f"{f['httplib_' + case + '_ttfc'] / 1000:.2f} ms{unserved('httplib_' + case, 8)}",
            f"{r:.2f}x{spread(case + '_ratio')}", ">= 0.90x", r >= 0.9)
    if have("resp_rps", "httplib_resp_rps"):
        ratio_row("HTTP replay /v1/responses",
                  f"{f['resp_rps']:,.0f} req/s, p50 {f['resp_p50'] / 1000:.2f} p99 {f['resp_p99'] / 1000:.2f} ms",
                  f"httplib {f['httplib_resp_rps']:,.0f} req/s, p99 {f['httplib_resp_p99'] / 1000:.2f} ms"
                  f"{unserved('httplib_resp')}", f["resp_rps"] / f["httplib_resp_rps"], 0.7)
    if have("resp_rps", "aimock_resp_rps"):
        ratio_row("Responses replay vs aimock", f"{f['resp_rps']:,.0f} req/s",
                  f"aimock {f['aimock_resp_rps']:,.0f} req/s, p99 {f['aimock_resp_p99'] / 1000:.1f} ms"
                  f"{unserved('aimock_resp')}", f["resp_rps"] / f["aimock_resp_rps"], 2.5)
    if have("resp_sse", "httplib_resp_sse"):
        ratio_row("Responses stream replay, 20 events",
                  f"{f['resp_sse']:,.0f} events/s, first {f['resp_sse_ttfc'] / 1000:.2f} ms",
                  f"httplib {f['httplib_resp_sse']:,.0f} events/s, first {f['httplib_resp_sse_ttfc'] / 1000:.2f} ms",
                  f["resp_sse"] / f["httplib_resp_sse"], 0.7)
    if have("resp_sse", "aimock_resp_sse"):
        ratio_row("Responses stream replay vs aimock", f"{f['resp_sse']:,.0f} events/s",
                  f"aimock {f['aimock_resp_sse']:,.0f} events/s, first {f['aimock_resp_sse_ttfc'] / 1000:.2f} ms",
                  f["resp_sse"] / f["aimock_resp_sse"], 2.5)
    if have("mcp_rps", "mcp_bare_rps", "mcp_ratio"):
        # The ratio is the median of each round's (replay and bare server
        # measured one after the other), with its range.
        r = f["mcp_ratio"]
        row("MCP replay tools/call (Streamable HTTP)",
            f"{f['mcp_rps']:,.0f} req/s, p50 {f['mcp_p50'] / 1000:.2f} p99 {f['mcp_p99'] / 1000:.2f} ms",
            f"SDK server {f['mcp_bare_rps']:,.0f} req/s, p50 {f['mcp_bare_p50'] / 1000:.2f} "
            f"p99 {f['mcp_bare_p99'] / 1000:.2f} ms{unserved('mcp_bare')}",
            f"{r:.2f}x{spread('mcp_ratio')}", ">= 0.70x", r >= 0.7)
    if have("mcp_added_p50", "mcp_added_p99"):
        a50 = f["mcp_added_p50"]
        row("mcp-proxy added latency (stdio)",
            f"p50 +{a50 / 1000:.3f}{spread('mcp_added_p50', 1 / 1000, '{:.3f}')} ms, "
            f"p99 +{f['mcp_added_p99'] / 1000:.2f} ms",
            f"via proxy p50 {f['mcp_proxy_p50'] / 1000:.3f} p99 {f['mcp_proxy_p99'] / 1000:.2f} ms; "
            f"HTTP p50 {f['mcp_http_p50'] / 1000:.3f} p99 {f['mcp_http_p99'] / 1000:.2f} ms",
            "", "< 0.2 ms at p50", a50 < 200)
    if have("sim_lean_median_ms", "sim_cli_median_ms"):
        # Start-up of `understudy sim` (bench/sim): exec to the prompt under a
        # pty; the lean executable and the big one, milliseconds.
        for key, name in (("sim_lean", "understudy-sim"), ("sim_cli", "understudy sim")):
            m = f[f"{key}_median_ms"]
            row(f"sim start-up to prompt ({name})",
                f"median {m:.1f}{spread(key + '_median_ms', 1, '{:.1f}')} ms, "
                f"p90 {f[key + '_p90_ms']:.1f} ms",
                f"min {f[key + '_min_ms']:.1f}, max {f[key + '_max_ms']:.1f} ms", "", "< 50 ms", m < 50)
    if have("sim_trip_p50_ms"):
        p50 = f["sim_trip_p50_ms"]
        row("sim round trip through tmux",
            f"p50 {p50:.1f}{spread('sim_trip_p50_ms', 1, '{:.1f}')} ms, "
            f"p90 {f['sim_trip_p90_ms']:.1f} ms, p99 {f['sim_trip_p99_ms']:.1f} ms",
            "send-keys -l + Enter to the completion's IPC line", "", "< 100 ms at p50", p50 < 100)
    if have("replay_rss_kb"):
        peers = []
        for peer, name in (("aimock", "aimock"), ("wiremock", "WireMock")):
            if have(f"{peer}_rss_kb"):
                peers.append(f"{name} {f[peer + '_rss_kb'] / 1024:,.0f} MB")
        row("RSS after the cases", f"{f['replay_rss_kb'] / 1024:.1f} MB", ", ".join(peers), "", "<= 64 MB",
            f["replay_rss_kb"] <= 64 * 1024)
    if have("rss_small_kb", "rss_large_kb"):
        g = (f["rss_large_kb"] - f["rss_small_kb"]) / f["rss_small_kb"]
        mid = f" -> {f['rss_mid_kb'] / 1024:.1f}" if have("rss_mid_kb") else ""
        steps = f" -> {int(f['rss_mid']):,}" if have("rss_mid") else ""
        row(f"RSS growth {int(f['rss_small']):,}{steps} -> {int(f['rss_large']):,} replays",
            f"{f['rss_small_kb'] / 1024:.1f}{mid} -> {f['rss_large_kb'] / 1024:.1f} MB", "",
            f"{g * 100:+.1f}%", "< 10%", g < 0.10)
    if have("ingest_per_s", "raw_per_s"):
        ratio_row("RecordExchanges ingest, 4 clients", f"{f['ingest_per_s']:,.0f} exchanges/s",
                  f"raw SQLite {f['raw_per_s']:,.0f} rows/s", f["ingest_per_s"] / f["raw_per_s"], 0.5)
    if have("ingest1_per_s", "raw_per_s"):
        ratio_row("RecordExchanges ingest, 1 client", f"{f['ingest1_per_s']:,.0f} exchanges/s",
                  f"raw SQLite {f['raw_per_s']:,.0f} rows/s", f["ingest1_per_s"] / f["raw_per_s"])
    if have("assert0", "assert1"):
        a0, a1 = f["assert0"], f["assert1"]
        fill = f" (fill {f['fill_s']:.0f} s)" if have("fill_s") else ""
        row(f"Assert on a {int(f['big_events']):,}-event run", f"{a0:.1f} ms -> {a1:.1f} ms",
            f"with {int(f.get('other_events0', 0)):,} -> {int(f['other_events']):,} other events{fill}",
            f"{a1 / a0:.2f}x",
            "< 50 ms, within 20%", max(a0, a1) < 50 and abs(a1 / a0 - 1) <= 0.2)
        q0, q1 = f["query0"], f["query1"]
        row("Query its tool_call events", f"{q0:.1f} ms -> {q1:.1f} ms", "", f"{q1 / q0:.2f}x" if q0 else "",
            "(informational)", None)
    if have("trace_bytes_per_call"):
        b = f["trace_bytes_per_call"]
        per = f" ({f['trace_events_per_call']:.1f} events)" if have("trace_events_per_call") else ""
        row(f"trace bytes per replayed call, over {int(f['rss_large']):,} replays", f"{b:,.0f} B{per}",
            "store used bytes after - before, WAL checkpointed", "", "<= 150 B", b <= 150)
    if have("startup_ms"):
        how = ""
        if have("fill_store_mb") and f["fill_store_mb"] < f["store_mb"]:
            how = f"{int(f['fill_store_mb']):,} MB filled, padded with a recorded session"
        if f.get("pad_skipped"):
            how = "not padded to 5 GB: too little free disk"
        row(f"start-up to serving ({int(f['store_mb']):,} MB store)", f"{f['startup_ms']:.0f} ms", how, "",
            "< 200 ms", f["startup_ms"] < 200)

    head = ("case", "understudy", "baseline", "ratio", "target", "")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(6)]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)).rstrip())
    if f.get("smoke"):
        print("smoke mode: every case ran and answered correctly; the figures are not measurements")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench/report.py FIGURES (bench/run's figures.txt)")
    try:
        main(sys.argv[1])
    except OSError as e:
        sys.exit(f"bench/report.py: cannot read {sys.argv[1]}: {e.strerror}")
    except ValueError as e:
        sys.exit(f"bench/report.py: {sys.argv[1]}: a figure is not a number ({e})")
