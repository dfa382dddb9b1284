"""The mlm-book command: recompute and judge the book's claims, or look after its cache.

  mlm-book build [--jobs N]        train every encoder the book reads that the store lacks (one pool)
  mlm-book build --dry-run         how many runs of each kind are missing
  mlm-book verify                  every claim, one line each
  mlm-book verify --only S3 --wide one section, nothing cut
  mlm-book cache list|clear        the content-addressed store of trained models and results
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
    import time

    from mlm_book.experiments import filing_encoder
    if arguments.dry_run:
        counts = filing_encoder.missing_by_kind()
        if not counts:
            print(f"nothing to build: the store {cache.cache_dir()} holds every run the book reads")
        for kind, count in sorted(counts.items(), key=lambda item: -item[1]):
            print(f"{count:4d}  {kind}")
        return 0
    start = time.perf_counter()

    def progress(done: int, total: int, kind: str) -> None:
        elapsed = time.perf_counter() - start
        left = elapsed / done * (total - done)  # at the average pace so far: runs differ in length
        print(f"[{done:{len(str(total))}d}/{total}] {kind:<16} elapsed {_clock(elapsed)}, about {_clock(left)} "
              "left", file=sys.stderr, flush=True)

    built = filing_encoder.ensure_book_encoders(processes=arguments.jobs, on_done=progress)
    print(f"built {built} missing runs in {time.perf_counter() - start:.0f} s into {cache.cache_dir()}"
          if built else f"nothing to build: the store {cache.cache_dir()} holds every run the book reads")
    return 0


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


def _cache(arguments) -> int:
    directory = cache.cache_dir()
    entries = sorted(directory.glob("*.json")) if directory.exists() else []
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
    build = commands.add_parser("build", help="train, in one pool of processes, every encoder the book reads "
                                              "that the store lacks")
    build.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help="worker processes (default: the available cores), one BLAS thread each")
    build.add_argument("--dry-run", action="store_true", help="list how many runs of each kind are missing")
    build.set_defaults(run=_build)
    store = commands.add_parser("cache", help="list or clear the content-addressed store")
    store.add_argument("action", choices=["list", "clear"], nargs="?", default="list")
    store.set_defaults(run=_cache)
    arguments = parser.parse_args(argv)
    try:
        return arguments.run(arguments)
    except ValueError as error:
        print(f"mlm-book: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
