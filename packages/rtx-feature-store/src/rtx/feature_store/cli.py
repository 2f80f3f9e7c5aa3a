"""`rtx feature-store`: apply a repository's definitions, materialize, list, serve.

    rtx feature-store apply --repo DIR [--allow-breaking]
    rtx feature-store materialize START END --repo DIR
    rtx feature-store materialize-incremental END --repo DIR
    rtx feature-store list --repo DIR
    rtx feature-store serve --repo DIR [--host 127.0.0.1] [--port 6566]

Times are ISO 8601 (naive = UTC). Exit status: 0 on success, 1 on an error, 2 on a usage error."""
from __future__ import annotations

import argparse
import sys

PROG = "rtx feature-store"


def feature_store_command(argv: list[str]) -> int:
    """Feature store: definitions, point-in-time training sets, online features, a feature server."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd")

    def add(name, help):
        c = sub.add_parser(name, help=help)
        c.add_argument("--repo", default=".", help="feature repository folder (features.toml / features.py)")
        c.add_argument("--online-store", default=None, help="sqlite:///path.db or redis://host:port/db")
        return c

    add("apply", "register the repository's definitions").add_argument("--allow-breaking", action="store_true")
    m = add("materialize", "load values with START <= timestamp < END into the online store")
    m.add_argument("start")
    m.add_argument("end")
    add("materialize-incremental", "materialize from each view's last run up to END").add_argument("end")
    add("list", "list the registered definitions")
    s = add("serve", "run the feature server")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=6566)  # Feast's default feature-server port
    args = p.parse_args(argv)
    if args.cmd is None:
        p.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required (apply, materialize, materialize-incremental, list, serve)",
              file=sys.stderr)
        return 2
    from .registry import BreakingChangeError
    from .repo import load_definitions
    from .store import FeatureStore

    try:
        store = FeatureStore(args.repo, online_store=args.online_store)
        if args.cmd == "apply":
            objs = load_definitions(args.repo)
            versions = store.apply(objs, allow_breaking=args.allow_breaking)
            for (kind, name), v in versions.items():
                print(f"applied {kind} {name} (version {v})")
        elif args.cmd == "materialize":
            for name, n in store.materialize(args.start, args.end).items():
                print(f"{name}: {n} entities")
        elif args.cmd == "materialize-incremental":
            for name, n in store.materialize_incremental(args.end).items():
                print(f"{name}: {n} entities")
        elif args.cmd == "list":
            for e in store.list_entities():
                print(f"entity {e.name} join_keys={e.join_keys}")
            for v in store.list_feature_views():
                print(f"feature_view {v.name} entities={v.entity_names} features={[f.name for f in v.features]} "
                      f"ttl={v.ttl}")
            for d in store.registry.list("on_demand_feature_view"):
                print(f"on_demand_feature_view {d['name']} features={[f['name'] for f in d['schema']]}")
            for s in store.list_feature_services():
                print(f"feature_service {s.name} v{s.version} features={s.features}")
        elif args.cmd == "serve":
            import uvicorn

            from .definitions import OnDemandFeatureView
            from .server import create_app
            try:  # on-demand views' functions come from the repo's own definitions file
                for o in load_definitions(args.repo):
                    if isinstance(o, OnDemandFeatureView):
                        store._udfs[o.name] = o.udf
            except FileNotFoundError:
                pass
            uvicorn.run(create_app(store), host=args.host, port=args.port, log_level="warning")
    except (BreakingChangeError, ValueError, KeyError, TypeError, FileNotFoundError) as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    return 0
