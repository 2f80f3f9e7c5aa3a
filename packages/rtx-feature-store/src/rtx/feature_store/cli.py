"""`rtx feature-store`: apply a repository's definitions, materialize, list, serve.

    rtx feature-store apply --repo DIR [--allow-breaking]
    rtx feature-store materialize START END --repo DIR
    rtx feature-store materialize-incremental END --repo DIR
    rtx feature-store list --repo DIR
    rtx feature-store serve --repo DIR [--host 127.0.0.1] [--port 6566] [--workers N]

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
    s.add_argument("--workers", type=int, default=1,
                   help="server processes sharing the port (SO_REUSEPORT), as `rtx serve --workers`")
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
            from functools import partial

            from .server import serve
            if args.workers < 1:
                raise ValueError(f"--workers must be >= 1, got {args.workers}")
            return serve(partial(open_for_serving, args.repo, args.online_store), args.host, args.port, args.workers)
    except (BreakingChangeError, ValueError, KeyError, TypeError, FileNotFoundError) as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    return 0


def open_for_serving(repo, online_store):
    """The FeatureStore a server (or each of its workers) answers from, with the on-demand views' functions
    loaded from the repository's own definitions file."""
    from .definitions import OnDemandFeatureView
    from .repo import load_definitions
    from .store import FeatureStore

    store = FeatureStore(repo, online_store=online_store)
    try:
        for o in load_definitions(repo):
            if isinstance(o, OnDemandFeatureView):
                store._udfs[o.name] = o.udf
    except FileNotFoundError:
        pass
    return store
