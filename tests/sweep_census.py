"""Census of the bad-input sweep, one forked process per call (the measurement of issue 36).

``tests/test_bad_inputs.py`` varies one argument at a time from each public callable's recorded
valid call and asserts, in one process. This script makes the same deterministic bad calls (every
drivable callable with a doctest example x every parameter x every value of ``bad_values``; not the
hypothesis-generated ones), each in a child forked from a parent that has already imported the
package and recorded the examples, and counts what happened instead of asserting:

* clear error: ``ValueError``/``TypeError`` naming the parameter;
* unclear error: ``ValueError``/``TypeError`` not naming it;
* other exception, by type (a ``MemoryError`` at the address-space cap is one);
* silent acceptance: a result holding NaN or an infinity (``outcome``'s only fault on success);
* crash: the child died by a signal, or exited without a report;
* hang: no answer within the time limit (the child's own alarm, or the parent's kill);
* success: a finite result (the "bad" value was in fact valid).

Each child caps its address space (``RLIMIT_AS``, ``--memory-gib`` above what it already maps) and
answers within ``--timeout`` seconds, or ``BUDGETS``'s own limit for the few callables whose valid
calls do real work; the parent kills its process group a second after that. A child's memoised
caches die with it, so no call sees another's state.

Usage (from the repository's root)::

    MLM_BOOK_BUILD_NOTHING=1 python tests/sweep_census.py [--jobs N] [--timeout 10] [--memory-gib 4]
        [--only SUBSTRING] [--json PATH]

It prints the callables driven and skipped (with reasons), the census, and every call that is
neither a clear error nor a success, marking the callables listed in ``OPEN``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import doctest
import faulthandler
import gc
import inspect
import json
import os
import pathlib
import select
import shutil
import signal
import sys
import tempfile
import time
import warnings

#: Seconds the parent waits past a call's limit before killing it: the child's alarm comes first
#: and says where it was; the kill is for a child stuck in C code that never sees the alarm.
GRACE = 1.0
#: Characters kept of a message (the report is for reading, not for logs).
MESSAGE = 200
CATEGORIES = ("clear error", "unclear error", "other exception", "silent acceptance", "crash", "hang", "success")
FAULTS = CATEGORIES[1:-1]


def _sweep():
    """``tests/test_bad_inputs.py`` as a module (importing it imports the package and lists its callables)."""
    here = str(pathlib.Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    # tests/conftest.py registers the doctest flag that marks a book-reading example; pytest is not
    # here to load it (registering is idempotent: the name keeps its number)
    doctest.register_optionflag("BOOK")
    import test_bad_inputs
    return test_bad_inputs


def plan(sweep, only: str | None):
    """The calls to make, ``(key, parameter, value)``, and what was left out and why."""
    import store_readers
    skipped = collections.defaultdict(list)
    calls, driven, no_parameters = [], [], []
    defaults_skipped = 0
    examples = sweep.examples()
    for key in sorted(sweep.CALLABLES):
        if only and only not in key:
            continue
        if key in sweep.NOT_DRIVEN:
            skipped[f"not driven: {sweep.NOT_DRIVEN[key]}"].append(key)
        elif key in store_readers.REGISTERED:
            skipped["store reader, left to the book tier (tests/test_bad_inputs_book.py)"].append(key)
        elif key not in examples:
            skipped["drivable but no doctest example (test_bad_inputs fails on it)"].append(key)
        else:
            # the recorded arguments, not _example's: that one makes scratch directories for the
            # writers, which the child makes for itself
            arguments = examples[key]
            parameters = sweep._params(key, arguments)
            (driven if parameters else no_parameters).append(key)
            for parameter in parameters:
                default = inspect.signature(sweep.CALLABLES[key]).parameters[parameter].default
                for value in sweep.bad_values(arguments.get(parameter, default)):
                    if sweep._is_the_default(value, default):
                        defaults_skipped += 1
                        continue
                    calls.append((key, parameter, value))
    return calls, driven, no_parameters, skipped, defaults_skipped


# ----------------------------------------------------------------------------- the child
def _child(sweep, call, limit: float, scratch: pathlib.Path) -> dict:
    """Make one call with ``outcome`` and say which category it falls in."""
    key, parameter, value = call
    tempfile.tempdir = str(scratch)  # _example's scratch directories go where the parent cleans up
    if key in sweep.WRITERS:  # as the test's fixture does: a toy run lands in scratch, not in the store
        os.chdir(scratch)
        os.environ["MLM_BOOK_CACHE"] = str(scratch / "cache")
    arguments = dict(sweep._example(key), **{parameter: value})
    obj = sweep.CALLABLES[key]
    seen = {}

    # outcome says whether the call is a fault; the wrapper tells a clear error from a success and
    # keeps the exception's type, so outcome's judgement is reused, not rewritten
    def observed(*args, **kwargs):
        try:
            seen["result"] = obj(*args, **kwargs)
        except BaseException as error:
            seen["error"] = error
            raise
        return seen["result"]
    observed.__signature__ = sweep._signature(obj)

    fault = sweep.outcome(observed, arguments, parameter, limit)
    error = seen.get("error")
    message = "" if error is None else str(error)[:MESSAGE]
    if fault is None:
        return {"category": "success" if error is None else "clear error",
                "type": None if error is None else type(error).__name__, "message": message}
    if fault == "hang":
        return {"category": "hang", "type": None, "message": f"no answer within {limit:g} s (alarm)"}
    if error is None:
        return {"category": "silent acceptance", "type": None, "message": fault}
    if isinstance(error, (ValueError, TypeError)):
        return {"category": "unclear error", "type": type(error).__name__, "message": message}
    return {"category": "other exception", "type": type(error).__name__, "message": message}


def _fork(sweep, call, limit: float, scratch: pathlib.Path):
    """Start a child for ``call``; return its pid, the read end of its report pipe and its stderr file."""
    read, write = os.pipe()
    log = scratch / "stderr"
    pid = os.fork()
    if pid == 0:  # the child: never return into the parent's loop
        code = 0
        try:
            os.setpgid(0, 0)  # its own group, so a kill also reaches any process it started
            os.close(read)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
            faulthandler.enable()  # a crash leaves its Python stack in the log the parent reads
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                report = _child(sweep, call, limit, scratch)
        except BaseException as error:  # noqa: BLE001 - the census's own failure, reported as such
            report = {"category": "harness error", "type": type(error).__name__, "message": str(error)[:MESSAGE]}
            code = 3
        try:
            payload = json.dumps(report).encode()
            while payload:
                payload = payload[os.write(write, payload):]
        finally:
            os._exit(code)  # no atexit handlers, no flushing of the parent's buffers
    os.close(write)
    return pid, read, log


# ----------------------------------------------------------------------------- the parent
@dataclasses.dataclass
class _Child:
    index: int  # of the call
    fd: int  # the read end of its report pipe
    deadline: float  # time.monotonic() past which it is killed
    scratch: pathlib.Path
    log: pathlib.Path  # its stderr
    chunks: list = dataclasses.field(default_factory=list)
    closed: bool = False  # end of file on the pipe


def run(sweep, calls, jobs: int, timeout: float, root: pathlib.Path, progress) -> list[dict]:
    """Every call in a forked child, at most ``jobs`` at a time; one record per call, in order."""
    records: list[dict | None] = [None] * len(calls)
    pending = collections.deque(range(len(calls)))
    running: dict[int, _Child] = {}
    done = 0

    def finish(pid, status):
        nonlocal done
        child = running.pop(pid)
        index, fd, chunks, scratch, log = child.index, child.fd, child.chunks, child.scratch, child.log
        os.set_blocking(fd, False)  # a grandchild may still hold the write end
        try:
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        except BlockingIOError:
            pass
        os.close(fd)
        with _quiet():
            os.killpg(pid, signal.SIGKILL)  # anything the call left running
        record = None
        if chunks:
            try:
                record = json.loads(b"".join(chunks))
            except ValueError:
                record = None
        if status == "timeout":
            record = {"category": "hang", "type": None, "message": "killed by the parent after the limit"}
        elif record is None:
            # the head: faulthandler writes the innermost frame first
            head = log.read_text(errors="replace")[:MESSAGE].strip() if log.exists() else ""
            how = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
                   else f"exit status {os.waitstatus_to_exitcode(status)}")
            record = {"category": "crash", "type": None, "message": f"{how} without a report; stderr: {head}"}
        shutil.rmtree(scratch, ignore_errors=True)
        key, parameter, value = calls[index]
        records[index] = dict(record, callable=key, parameter=parameter, value=sweep.describe(value))
        done += 1
        progress(done, len(calls))

    try:
        while pending or running:
            while pending and len(running) < jobs:
                index = pending.popleft()
                key = calls[index][0]
                limit = max(timeout, sweep.BUDGETS.get(key, 0.0))
                scratch = pathlib.Path(tempfile.mkdtemp(prefix="call-", dir=root))
                pid, fd, log = _fork(sweep, calls[index], limit, scratch)
                running[pid] = _Child(index, fd, time.monotonic() + limit + GRACE, scratch, log)
            now = time.monotonic()
            wait = max(0.0, min(child.deadline for child in running.values()) - now)
            readable = [child.fd for child in running.values() if not child.closed]
            ready, _, _ = select.select(readable, [], [], min(wait, 0.05) if not readable else min(wait, 1.0))
            for child in running.values():
                if child.fd in ready:
                    chunk = os.read(child.fd, 65536)
                    if chunk:
                        child.chunks.append(chunk)
                    else:
                        child.closed = True
            for pid in list(running):
                # end of file: the child has closed its report, that is, exited (a blocking wait is short)
                reaped, status = os.waitpid(pid, 0 if running[pid].closed else os.WNOHANG)
                if reaped:
                    finish(pid, status)
                elif time.monotonic() > running[pid].deadline:
                    with _quiet():
                        os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    finish(pid, "timeout")
    finally:
        for pid in list(running):  # interrupted: leave no child behind
            with _quiet():
                os.killpg(pid, signal.SIGKILL)
            with _quiet():
                os.waitpid(pid, 0)
    return records


class _quiet:
    """Ignore a process that is already gone."""
    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        return kind is not None and issubclass(kind, (ProcessLookupError, ChildProcessError, PermissionError))


# ----------------------------------------------------------------------------- the report
def report(sweep, records, driven, no_parameters, skipped, defaults_skipped, seconds, out=sys.stdout):
    total = len(records)
    counts = collections.Counter(record["category"] for record in records)
    others = collections.Counter(record["type"] for record in records if record["category"] == "other exception")
    print(f"public callables: {len(sweep.CALLABLES)}; driven: {len(driven)} "
          f"(+ {len(no_parameters)} with no parameter to vary); skipped: {sum(map(len, skipped.values()))}", file=out)
    for reason, keys in sorted(skipped.items(), key=lambda item: -len(item[1])):
        named = "" if len(keys) > 12 else ": " + ", ".join(key.removeprefix("mlm_book.") for key in keys)
        print(f"  {len(keys):4d}  {reason}{named}", file=out)
    print(f"\n{total} bad calls ({defaults_skipped} None-for-a-None-default calls left out, as the test does), "
          f"{seconds:.0f} s", file=out)
    for category in CATEGORIES + ("harness error",):
        if counts[category] or category in CATEGORIES:
            print(f"  {category:18s} {counts[category]:6d}  {100 * counts[category] / max(total, 1):6.2f} %", file=out)
        if category == "other exception":
            for kind, count in others.most_common():
                print(f"      {kind:28s} {count:5d}", file=out)
    # issue 36's done-when, read where the known faults are not: every category but these two must be empty
    known = collections.Counter(record["category"] for record in records if record["callable"] not in sweep.OPEN)
    print(f"  outside OPEN: {sum(known.values())} calls, "
          + ", ".join(f"{category} {known[category]}" for category in CATEGORIES), file=out)
    faults = [record for record in records if record["category"] not in ("clear error", "success")]
    if faults:
        print(f"\n{len(faults)} calls that are neither a clear error nor a success "
              f"(* = the callable is in OPEN):", file=out)
        for record in faults:
            mark = "*" if record["callable"] in sweep.OPEN else " "
            kind = f"{record['type']}: " if record["type"] else ""
            print(f" {mark} [{record['category']}] {record['callable']}({record['parameter']}={record['value']}) "
                  f"{kind}{' '.join(record['message'].split())[:MESSAGE]}", file=out)
        outside = sorted({record["callable"] for record in faults if record["callable"] not in sweep.OPEN})
        print(f"\ncallables with such calls: {len({record['callable'] for record in faults})}, "
              f"of which not in OPEN: {len(outside)}", file=out)
        for key in outside:
            print(f"    {key}", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="children at a time (default 1)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a call may take (default 10)")
    parser.add_argument("--memory-gib", type=float, default=4.0, help="address space a call may add (default 4)")
    parser.add_argument("--only", help="drive only the callables whose dotted name contains this")
    parser.add_argument("--json", type=pathlib.Path, help="write every call's record and the counts here")
    options = parser.parse_args(argv)
    if options.jobs < 1 or options.timeout <= 0 or options.memory_gib <= 0:
        parser.error("--jobs, --timeout and --memory-gib must be positive")
    if not os.environ.get("MLM_BOOK_BUILD_NOTHING"):
        parser.error("set MLM_BOOK_BUILD_NOTHING=1: a varied argument must not start a book-sized training")

    start = time.perf_counter()
    sweep = _sweep()
    sweep.MEMORY = int(options.memory_gib * 2**30)  # read by memory_cap at each call
    calls, driven, no_parameters, skipped, defaults_skipped = plan(sweep, options.only)
    import matplotlib.pyplot  # noqa: F401 - outcome closes figures in every child: import it once, here
    print(f"recorded the examples and planned {len(calls)} calls in {time.perf_counter() - start:.0f} s",
          file=sys.stderr)
    # Objects alive now are never collected in the children: a collection would touch (and so copy)
    # every page of the parent's heap in each of them.
    gc.collect()
    gc.freeze()

    def progress(done, total):
        if done % 500 == 0 or done == total:
            print(f"  {done}/{total} calls, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    sys.stdout.flush()
    sys.stderr.flush()
    root = pathlib.Path(tempfile.mkdtemp(prefix="mlm-book-census-"))
    try:
        records = run(sweep, calls, options.jobs, options.timeout, root, progress)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    seconds = time.perf_counter() - start
    report(sweep, records, driven, no_parameters, skipped, defaults_skipped, seconds)
    if options.json:
        options.json.write_text(json.dumps({
            "options": {"jobs": options.jobs, "timeout": options.timeout, "memory_gib": options.memory_gib,
                        "only": options.only},
            "seconds": round(seconds, 1),
            "counts": collections.Counter(record["category"] for record in records),
            "driven": driven, "no_parameters": no_parameters, "skipped": skipped,
            "faults": [dict(record, open=record["callable"] in sweep.OPEN) for record in records
                       if record["category"] not in ("clear error", "success")],
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
