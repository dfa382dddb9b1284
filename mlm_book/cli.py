"""The mlm-book command: recompute and judge the book's claims, or look after its cache.

    mlm-book build [--jobs N]                 build every artefact the book reads that the store lacks
    mlm-book build --only GLOB                only the kinds whose name matches, e.g. 'pair*'
    mlm-book build --dry-run                  list what is missing, with estimated costs
    mlm-book build --tiny --store DIR         every kind at its tiny setup (the same code, in seconds)
    mlm-book verify                           every claim, one line each
    mlm-book verify --only S3 --wide          one section, nothing cut
    mlm-book cache list|clear                 the content-addressed store of trained models and results
    mlm-book cache prune [--dry-run]          remove the entries of declared artefacts no current setup reaches
"""

from __future__ import annotations

import argparse
import shutil
import sys

from mlm_book import cache, ledger

__all__ = ["main"]


def _verify(arguments) -> int:
    results = ledger.verify(only=arguments.only)
    print(ledger.to_markdown(results) if arguments.markdown else ledger.to_text(results, wide=arguments.wide))
    return 0 if all(result.passed for result in results) else 1


def _build(arguments) -> int:
    import os
    import time

    from mlm_book import artefacts
    if arguments.store is not None:
        os.environ[cache.ENVIRONMENT_VARIABLE] = arguments.store   # the workers inherit it
    runs = artefacts.tiny_runs(arguments.only) if arguments.tiny else artefacts.book_runs(arguments.only)
    if not runs:
        raise ValueError(f"--only {arguments.only!r} matches no kind of artefact; kinds: {', '.join(artefacts.kinds())}")
    todo = artefacts.missing(runs)
    if arguments.dry_run:
        _list_runs(todo, len(runs))
        return 0
    if not todo:
        print(f"nothing to build: the store {cache.cache_dir()} holds all {len(runs)} runs asked for")
        return 0
    start = time.perf_counter()
    estimate = {id(run): artefacts.cost(run) for run in todo}
    done_cost = [0.0]
    finished = [0]
    bar = _progress_bar(len(todo))

    def progress(run, seconds: float) -> None:
        finished[0] += 1
        done_cost[0] += estimate[id(run)]
        elapsed = time.perf_counter() - start
        # the estimates give each run's share of the work; the pace so far converts the rest to time
        left = elapsed / done_cost[0] * (sum(estimate.values()) - done_cost[0]) if done_cost[0] else 0.0
        line = (f"[{finished[0]:{len(str(len(todo)))}d}/{len(todo)}] {artefacts.describe(run)} in {_clock(seconds)}; "
                f"elapsed {_clock(elapsed)}, about {_clock(left)} left")
        if bar is None:
            print(line, file=sys.stderr, flush=True)
        else:
            bar.set_postfix_str(f"{artefacts.describe(run)}, about {_clock(left)} left", refresh=False)
            bar.update(1)

    client = _client(arguments.scheduler)
    try:
        per_kind = artefacts.build(todo, processes=arguments.jobs, on_done=progress,
                                   executor=None if client is None else client.get_executor())
    finally:
        if bar is not None:
            bar.close()
        if client is not None:
            client.close()
    print(f"built {len(todo)} runs in {_clock(time.perf_counter() - start)} into {cache.cache_dir()}")
    counts = {kind: sum(run.kind == kind for run in todo) for kind in per_kind}
    for kind, seconds in sorted(per_kind.items(), key=lambda item: -item[1]):
        print(f"  {kind:<18} {counts[kind]:3d} runs  {_clock(seconds):>8} of worker time")
    return 0


def _client(address: str | None):
    """A ``dask.distributed`` client of the scheduler at ``address`` (the optional extra ``cluster``), or None."""
    if address is None:
        return None
    try:
        from distributed import Client
    except ImportError as error:
        raise ValueError("--scheduler needs dask.distributed: pip install 'mlm-book[cluster]'") from error
    return Client(address)


def _list_runs(todo: list, total: int) -> None:
    from mlm_book import artefacts
    if not todo:
        print(f"nothing to build: the store {cache.cache_dir()} holds all {total} runs asked for")
        return
    print(f"{len(todo)} of {total} runs missing from {cache.cache_dir()}, in the order a build starts them "
          "(estimated minutes on one core):")
    for run in todo:
        print(f"  {artefacts.cost(run) / 60:7.1f}  {artefacts.describe(run)}")
    every = artefacts.kinds()
    by_kind: dict[str, list[float]] = {}
    for run in todo:
        by_kind.setdefault(run.kind, []).append(artefacts.cost(run))
    print("by kind:")
    for kind, costs in by_kind.items():
        print(f"  {len(costs):4d}  {kind:<24} chapter {every[kind].chapter:2d}  {sum(costs) / 60:7.1f} min")
    by_chapter: dict[int, list[float]] = {}
    for kind, costs in by_kind.items():
        by_chapter.setdefault(every[kind].chapter, []).extend(costs)
    print("by chapter (the chapter each kind was declared for):")
    for chapter, costs in sorted(by_chapter.items()):
        print(f"  {len(costs):4d}  chapter {chapter:2d}  {sum(costs) / 60:7.1f} min")
    print(f"  total {sum(map(sum, by_kind.values())) / 60:.1f} min on one core")


def _progress_bar(total: int):
    """A tqdm bar on a terminal; None elsewhere (a log gets one line per finished run instead)."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}:{seconds:02d}"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _prune(directory, entries, dry_run: bool) -> int:
    from mlm_book import artefacts
    reached = artefacts.reached_entries()
    declared = {stem.rsplit("-", 1)[0] for stem in reached}
    stale = [path for path in entries if path.stem.rsplit("-", 1)[0] in declared and path.stem not in reached]
    kept_other = sorted({path.stem.rsplit("-", 1)[0] for path in entries} - declared)
    size = sum(part.stat().st_size for path in stale for part in (path, path.with_suffix(".npz")) if part.exists())
    verb = "would remove" if dry_run else "removed"
    for path in stale:
        print(f"  {verb} {path.stem}")
        if not dry_run:
            for part in (path.with_suffix(".npz"), path, path.with_name(f".{path.stem}.lock")):
                part.unlink(missing_ok=True)
    print(f"{verb} {len(stale)} entries ({_megabytes(size)}) that no declared artefact reaches in {directory}; "
          f"kept {len(reached)} that one does")
    if kept_other:
        print(f"kept every entry of {len(kept_other)} names no artefact declares (results chapters compute and "
              f"store themselves): {', '.join(kept_other)}")
    return 0


def _cache(arguments) -> int:
    directory = cache.cache_dir()
    entries = sorted(directory.glob("*.json")) if directory.exists() else []
    if arguments.action == "prune":
        return _prune(directory, entries, arguments.dry_run)
    if arguments.action == "clear":
        if not directory.exists():
            print(f"nothing to remove: {directory} does not exist")
            return 0
        shutil.rmtree(directory)
        print(f"removed {directory} ({len(entries)} entries)")
        return 0
    leftovers = sorted(directory.glob(".*.tmp")) if directory.exists() else []
    sizes = {path.stem: sum(part.stat().st_size for part in (path, path.with_suffix(".npz")) if part.exists())
             for path in entries}
    by_name: dict[str, list[int]] = {}
    for stem, size in sizes.items():
        by_name.setdefault(stem.rsplit("-", 1)[0], []).append(size)
    print(f"{directory}: {len(entries)} entries, {_megabytes(sum(sizes.values()))}")
    for name, found in sorted(by_name.items(), key=lambda item: -sum(item[1])):
        print(f"  {_megabytes(sum(found)):>9}  {len(found):3d} x {name}")
    executed = directory / "executed-chapters"      # written by the site build (docs/hooks/book.py)
    folders = [path for path in executed.iterdir() if path.is_dir()] if executed.is_dir() else []
    if folders:
        size = sum(page.stat().st_size for folder in folders for page in folder.glob("*.json"))
        print(f"  {_megabytes(size):>9}  {len(folders):3d} x executed chapters (the site build's pages, a folder per "
              "version of the package and its dependencies; the build keeps the few most recently used)")
    if leftovers:
        print(f"  and {len(leftovers)} temporary files of interrupted writes (removed when their entry is next "
              "computed, or by `mlm-book cache clear`)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mlm-book`` console script; returns the exit status."""
    if argv is not None and (isinstance(argv, (str, bytes)) or not all(isinstance(item, str) for item in argv)):
        raise TypeError(f"argv must be a list of strings (the command line's words) or None, got {argv!r:.60}")
    parser = argparse.ArgumentParser(prog="mlm-book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="recompute every registered claim and judge it")
    verify.add_argument("--only", action="append", metavar="PREFIX",
                        help="only claims whose id starts with PREFIX (repeatable); a bare section such as "
                             "S1 means S1-, not S10-")
    verify.add_argument("--markdown", action="store_true", help="print a Markdown table")
    verify.add_argument("--wide", action="store_true", help="cut nothing: one block of lines per claim")
    verify.set_defaults(run=_verify)
    build = commands.add_parser("build", help="build, in one pool of processes, every artefact the book reads "
                                              "that the store lacks")
    build.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help="worker processes (default: the available cores), one BLAS thread each")
    build.add_argument("--only", metavar="GLOB", default=None,
                       help="only the kinds whose name matches this shell pattern, e.g. 'hmm-*'")
    build.add_argument("--dry-run", action="store_true",
                       help="list the missing runs and their estimated cost, build nothing")
    build.add_argument("--tiny", action="store_true",
                       help="build each kind at its tiny setup instead (the same code, in seconds)")
    build.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="run on a dask.distributed cluster (tcp://host:8786) instead of local processes; every "
                            "worker must see the store at the same path (--store)")
    build.add_argument("--store", metavar="DIR", default=None,
                       help="the store to build into (default: $MLM_BOOK_CACHE or the user's cache directory)")
    build.set_defaults(run=_build)
    store = commands.add_parser("cache", help="list, prune or clear the content-addressed store")
    store.add_argument("action", choices=["list", "prune", "clear"], nargs="?", default="list")
    store.add_argument("--dry-run", action="store_true", help="prune: list what would be removed, remove nothing")
    store.set_defaults(run=_cache)
    arguments = parser.parse_args(argv)
    try:
        return arguments.run(arguments)
    except ValueError as error:
        print(f"mlm-book: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
