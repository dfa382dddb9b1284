"""The mlm-book command: recompute and judge the book's claims, or look after its cache.

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
    print(f"{directory}: {len(entries)} entries")
    for path in entries:
        print(f"  {path.stem}")
    if leftovers:
        print(f"  and {len(leftovers)} temporary files of interrupted writes (removed when their entry is next "
              "computed, or by `mlm-book cache clear`)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mlm-book`` console script; returns the exit status."""
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
