"""`rtx hub`: register, list, show, promote, remove and verify models in a registry.

Exit status: 0 on success, 1 on a registry error (message on stderr, no traceback), 2 on a
usage error. The registry is --registry DIR, else $RTX_HUB_REGISTRY, else $RTX_HOME/registry,
else ~/.rtx/registry."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

PROG = "rtx hub"


@dataclasses.dataclass
class HubSettings:
    """Settings of the hub command line, read from RTX_HUB_* environment variables."""

    registry: Path | None = None  # RTX_HUB_REGISTRY: the registry used when --registry is not given


def hub_command(argv: list[str]) -> int:
    """Manage a model registry: register, list, show, promote, rm, verify."""
    from rtx.config import ConfigError, load_config
    from rtx.hub.errors import RegistryError

    parser = _parser()
    args = parser.parse_args(argv)  # SystemExit(2) on a usage error, as argparse does
    if args.cmd is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required ({', '.join(_COMMANDS)})", file=sys.stderr)
        return 2
    try:
        settings = load_config(HubSettings, env_prefix="RTX_HUB_")
    except ConfigError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    from rtx.hub.registry import Registry

    try:
        reg = Registry(args.registry or settings.registry)
        return _COMMANDS[args.cmd](reg, args)
    except RegistryError as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `rtx hub list | head`: the reader went away, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush is quiet
        return 1
    except OSError as e:  # permissions, full disk, a registry on a vanished mount
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--registry", metavar="DIR", type=Path,
                        help="registry directory (default: $RTX_HUB_REGISTRY, $RTX_HOME/registry, ~/.rtx/registry)")
    p = argparse.ArgumentParser(prog=PROG, description=hub_command.__doc__)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    r = sub.add_parser("register", parents=[common], help="add a model version (ONNX file or rtx checkpoint)",
                       description="Add NAME:VERSION to the registry from FILE (an .onnx model or an rtx checkpoint).")
    r.add_argument("name", metavar="NAME")
    r.add_argument("file", metavar="FILE", type=Path)
    r.add_argument("--version", "-v", required=True, metavar="V", help="semantic version, e.g. 1.2.0")
    r.add_argument("--stage", default="staging", choices=("staging", "production", "archived"))
    r.add_argument("--metadata", "-m", nargs="+", action="extend", default=[], metavar="KEY=VALUE", type=_key_value,
                   help="metadata entries; a VALUE that is valid JSON (0.93, true, [1,2]) is stored as JSON")
    card = r.add_mutually_exclusive_group()
    card.add_argument("--card", metavar="TEXT", help="model card text (Markdown)")
    card.add_argument("--card-file", metavar="PATH", type=Path, help="read the model card text from a file")
    r.add_argument("--signature", metavar="JSON_FILE", type=Path,
                   help="input/output signature as JSON (read from the graph for ONNX files when omitted)")
    r.add_argument("--json", action="store_true", help="print the new version as JSON")

    ls = sub.add_parser("list", parents=[common], help="list versions as a table",
                        description="List model versions: name, version, stage, format, size, created.")
    ls.add_argument("name", nargs="?", metavar="NAME", help="only this model")
    ls.add_argument("--stage", choices=("staging", "production", "archived"), help="only versions in this stage")
    ls.add_argument("--json", action="store_true", help="print a JSON list")

    sh = sub.add_parser("show", parents=[common], help="show one version and its model card",
                        description="Show NAME (its production version, else the highest) or NAME:VERSION.")
    sh.add_argument("ref", metavar="NAME[:VERSION]")
    sh.add_argument("--json", action="store_true", help="print the version as JSON (card included)")

    pr = sub.add_parser("promote", parents=[common], help="move a version to another stage",
                        description="Move NAME VERSION to STAGE (staging, production, archived).")
    pr.add_argument("name", metavar="NAME")
    pr.add_argument("version", metavar="VERSION")
    pr.add_argument("stage", metavar="STAGE", choices=("staging", "production", "archived"))
    pr.add_argument("--archive-existing", action="store_true",
                    help="with STAGE=production: archive the model's other production versions")

    rm = sub.add_parser("rm", parents=[common], help="remove a version", description="Delete NAME VERSION.")
    rm.add_argument("name", metavar="NAME")
    rm.add_argument("version", metavar="VERSION")

    v = sub.add_parser("verify", parents=[common], help="check the sha256 of artifacts",
                       description="Recompute every artifact's sha256 (or one model's, or NAME:VERSION's).")
    v.add_argument("ref", nargs="?", metavar="NAME[:VERSION]")
    return p


def _key_value(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _split_ref(ref: str) -> tuple[str, str | None]:
    name, _, version = ref.partition(":")
    return name, version or None


def _register(reg, args) -> int:
    from rtx.hub.errors import RegistryError

    card = args.card
    if args.card_file is not None:
        card = _read_text(args.card_file, "card file")
    signature = None
    if args.signature is not None:
        try:
            signature = json.loads(_read_text(args.signature, "signature file"))
        except ValueError as e:
            raise RegistryError(f"signature file {str(args.signature)!r} is not valid JSON: {e}") from None
    metadata = dict(args.metadata)
    mv = reg.register(args.file, args.name, args.version, metadata=metadata, signature=signature, card=card,
                      stage=args.stage)
    if args.json:
        print(json.dumps(mv.to_dict(), indent=2))
    else:
        print(f"registered {mv.uri} ({mv.format}, {_size(mv.size)}, stage {mv.stage}) in {reg.root}")
        print(f"sha256 {mv.sha256}")
    return 0


def _read_text(path: Path, what: str) -> str:
    from rtx.hub.errors import RegistryError

    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RegistryError(f"cannot read the {what} {str(path)!r}: {e}") from None


def _list(reg, args) -> int:
    versions = [mv for mv in reg.list(args.name) if args.stage is None or mv.stage == args.stage]
    if args.json:
        print(json.dumps([mv.to_dict() for mv in versions], indent=2))
        return 0
    if not versions:
        print(f"no models in {reg.root}" + (f" named {args.name!r}" if args.name else "")
              + (f" in stage {args.stage!r}" if args.stage else ""))
        return 0
    rows = [("NAME", "VERSION", "STAGE", "FORMAT", "SIZE", "CREATED")]
    rows += [(mv.name, mv.version, mv.stage, mv.format, _size(mv.size), mv.created[:19].replace("T", " "))
             for mv in versions]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.rjust(w) if i == 4 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return 0


def _show(reg, args) -> int:
    name, version = _split_ref(args.ref)
    mv = reg.get(name, version)
    if args.json:
        print(json.dumps({**mv.to_dict(), "card": mv.card}, indent=2))
        return 0
    for key in ("name", "version", "stage", "format", "artifact", "sha256", "size", "created", "checkpoint_format"):
        value = getattr(mv, key)
        if value is not None:
            print(f"{key + ':':<19}{_size(value) + f' ({value:,} bytes)' if key == 'size' else value}")
    print()
    print(mv.card.rstrip())
    return 0


def _promote(reg, args) -> int:
    mv = reg.promote(args.name, args.version, args.stage, archive_existing=args.archive_existing)
    print(f"{mv.uri} is now in stage {mv.stage}")
    return 0


def _rm(reg, args) -> int:
    mv = reg.remove(args.name, args.version)
    print(f"removed {mv.uri} from {reg.root}")
    return 0


def _verify(reg, args) -> int:
    if args.ref and ":" in args.ref:
        versions = [reg.get(*_split_ref(args.ref))]
    else:
        versions = reg.list(args.ref)
    for mv in versions:
        mv.verify()
        print(f"ok  {mv.uri}  sha256 {mv.sha256}")
    if not versions:
        print(f"no models in {reg.root}")
    return 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


_COMMANDS = {"register": _register, "list": _list, "show": _show, "promote": _promote, "rm": _rm,
             "verify": _verify}
