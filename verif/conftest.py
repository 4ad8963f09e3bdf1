"""pytest set-up for the cocotb benches: ``--merit-summary`` prints one table of every bench run:
outcome, wall time and the metrics the benches recorded (cycles, utilization...). ``verif/`` is on
the Python path through ``pythonpath`` in ``pyproject.toml`` (``harness``, ``stubs``).
"""


def pytest_addoption(parser):
    parser.addoption("--merit-summary", action="store_true",
                     help="print a summary table of the MERIT-z bench runs")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not config.getoption("--merit-summary"):
        return
    rows = []
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", "call") not in ("call", "setup"):
                continue
            if report.when == "setup" and outcome == "passed":
                continue
            metrics = ", ".join(f"{k}={v}" for k, v in getattr(report, "user_properties", []))
            rows.append((report.nodeid.split("::", 1)[-1], outcome,
                         f"{report.duration:.1f}s", metrics))
    if not rows:
        return
    header = ("bench", "result", "time", "metrics")
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(4)]
    terminalreporter.write_sep("=", "MERIT-z regression summary")
    for row in [header] + sorted(rows):
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        terminalreporter.write_line("  ".join(cells))
