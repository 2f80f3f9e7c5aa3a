"""`rtx federated simulate`: federated training of an MLP on non-IID digits."""
from __future__ import annotations

import argparse
import json
import sys
import time


def federated_command(argv) -> int:
    """federated learning: simulate FedAvg/FedProx/FedAdam on non-IID digits (secure aggregation, DP-SGD)"""
    parser = argparse.ArgumentParser(prog="rtx federated", description=federated_command.__doc__)
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("simulate", help="train an MLP on digits split over many non-IID clients")
    p.add_argument("--clients", type=int, default=100, help="number of clients (default 100)")
    p.add_argument("--rounds", type=int, default=100, help="federated rounds (default 100)")
    p.add_argument("--fraction", type=float, default=0.2, help="share of clients sampled per round (default 0.2)")
    p.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration of the label split (default 0.5)")
    p.add_argument("--strategy", choices=["fedavg", "fedprox", "fedadam"], default="fedavg")
    p.add_argument("--mu", type=float, default=0.01, help="FedProx proximal weight (default 0.01)")
    p.add_argument("--server-lr", type=float, default=None,
                   help="server learning rate (FedAvg/FedProx default 1; FedAdam's eta, default 0.01)")
    p.add_argument("--local-epochs", type=int, default=5, help="local epochs per round (default 5)")
    p.add_argument("--batch-size", type=int, default=10, help="local batch size (default 10)")
    p.add_argument("--lr", type=float, default=0.1, help="client SGD learning rate (default 0.1)")
    p.add_argument("--hidden", type=int, default=128, help="MLP hidden width (default 128)")
    p.add_argument("--dp", action="store_true", help="train clients with DP-SGD and report epsilon")
    p.add_argument("--noise-multiplier", type=float, default=1.0, help="DP-SGD noise multiplier sigma (default 1.0)")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="DP-SGD per-sample clipping norm C (default 1.0)")
    p.add_argument("--delta", type=float, default=1e-5, help="DP delta for the reported epsilon (default 1e-5)")
    p.add_argument("--secure-agg", action="store_true", help="aggregate with pairwise-masked secure aggregation")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="with --secure-agg: probability that a sampled client drops mid-round (default 0)")
    p.add_argument("--transport", choices=["inprocess", "mpi"], default="inprocess",
                   help="inprocess (default) or mpi (run under `rtx launch -n N -m rtx.federated simulate ...`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default=None, help="write the accuracy-per-round curve to this PNG")
    p.add_argument("--json", default=None, help="write the per-round history to this JSON file")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    args = parser.parse_args(argv)
    return _simulate(args)


def _simulate(args) -> int:
    from .client import DPConfig
    from .params import get_weights
    from .server import run_federated
    from .simulation import load_digits_split, make_digits_clients, make_evaluator, make_mlp, plot_history
    from .strategy import get_strategy
    from .transport import InProcessTransport, MPITransport

    for name in ("clients", "rounds", "local_epochs", "batch_size", "hidden"):
        if getattr(args, name) < 1:
            print(f"rtx federated: --{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}", file=sys.stderr)
            return 2
    x_train, x_test, y_train, y_test = load_digits_split(seed=args.seed)
    model = make_mlp(hidden=args.hidden, seed=args.seed)
    dp = DPConfig(args.noise_multiplier, args.max_grad_norm, args.delta) if args.dp else None
    clients = make_digits_clients(model, x_train, y_train, args.clients, args.alpha, seed=args.seed, dp=dp,
                                  lr=args.lr, batch_size=args.batch_size, epochs=args.local_epochs)
    transport = MPITransport(clients) if args.transport == "mpi" else InProcessTransport(clients)
    if not transport.is_server:
        transport.serve()
        return 0
    kw = {}
    if args.strategy == "fedprox":
        kw["mu"] = args.mu
    if args.server_lr is not None:
        kw["eta" if args.strategy == "fedadam" else "server_lr"] = args.server_lr
    strategy = get_strategy(args.strategy, **kw)
    t0 = time.perf_counter()

    def progress(rec):
        if not args.quiet:
            extra = f"  epsilon {rec.epsilon:.2f}" if rec.epsilon is not None else ""
            drop = f"  dropped {rec.dropped}" if rec.dropped else ""
            print(f"round {rec.round:4d}  accuracy {100 * rec.accuracy:6.2f}%  loss {rec.loss:.4f}"
                  f"{extra}{drop}  {time.perf_counter() - t0:6.1f} s", flush=True)

    try:
        history = run_federated(transport, strategy, get_weights(model), rounds=args.rounds, fraction=args.fraction,
                                seed=args.seed, secure_aggregation=args.secure_agg, dropout=args.dropout,
                                evaluate_fn=make_evaluator(model, x_test, y_test), callback=progress)
    finally:
        transport.close()
    seconds = time.perf_counter() - t0
    acc = history.accuracy
    first95 = next((r.round for r in history.rounds if r.accuracy >= 0.95), None)
    eps = history.rounds[-1].epsilon
    summary = (f"{args.strategy} on {args.clients} clients (alpha={args.alpha}, fraction={args.fraction}), "
               f"{args.rounds} rounds in {seconds:.1f} s: final accuracy {100 * acc[-1]:.2f}%, "
               f"best {100 * max(acc):.2f}%, first >= 95% at round {first95}")
    if eps is not None:
        summary += (f"; DP-SGD sigma={args.noise_multiplier}, C={args.max_grad_norm}: "
                    f"epsilon = {eps:.2f} at delta = {args.delta}")
    print(summary)
    if args.plot:
        title = f"rtx federated: {args.strategy}, {args.clients} clients, Dirichlet alpha={args.alpha}"
        if eps is not None:
            title += f"\nDP-SGD sigma={args.noise_multiplier}: epsilon={eps:.2f} (delta={args.delta})"
        plot_history(history, args.plot, title)
        print(f"plot written to {args.plot}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "world_size": getattr(transport, "world", 1), "seconds": seconds,
                       "rounds": history.to_dicts()}, f, indent=1)
    return 0


def main() -> int:  # `python -m rtx.federated simulate ...` (what `rtx launch -m` runs on each rank)
    return federated_command(sys.argv[1:])
