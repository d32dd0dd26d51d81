"""`xpiler parse FILE [--print] [--to DIALECT] [--json]`: show the IR, or print the kernel back."""
from __future__ import annotations

import argparse
import json
import sys

from .frontend import parse_file
from .frontend.errors import XPError

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def _args(args):
    if isinstance(args, argparse.Namespace):
        return args
    p = argparse.ArgumentParser(prog="xpiler parse")
    p.add_argument("src")
    p.add_argument("--print", dest="print_", action="store_true")
    p.add_argument("--to", choices=["cuda", "hip", "bang", "c"])
    p.add_argument("--json", action="store_true")
    return p.parse_args(list(args))


def parse_main(args) -> int:
    a = _args(args)
    try:
        notes: list = []
        prog = parse_file(a.src, notes=notes)
        for n in notes:    # XP1150: a variant guard read as its portable path
            print(n.format(), file=sys.stderr)
        if getattr(a, "print_", False):
            from .printers import print_program
            text = print_program(prog, getattr(a, "to", None) or prog.dialect)
            if getattr(a, "json", False):
                print(json.dumps({"ok": True, "dialect": getattr(a, "to", None) or prog.dialect, "text": text}))
            else:
                sys.stdout.write(text)
        elif getattr(a, "json", False):
            from .ir.serialize import to_json
            print(json.dumps(to_json(prog)))
        else:
            from .ir.serialize import dump
            sys.stdout.write(dump(prog))
        return EXIT_OK
    except XPError as e:
        if getattr(a, "json", False):
            print(json.dumps({"ok": False, "error": e.to_json() if hasattr(e, "to_json") else str(e)}))
        else:
            print(e.format() if hasattr(e, "format") else str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
