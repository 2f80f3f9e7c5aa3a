"""`rtx cfd`: run a classic case and compare it with the literature.

    rtx cfd cavity --re 100 --n 129 --out cavity.png

Exit status: 0 on success, 1 on an error, 2 on a usage error."""
from __future__ import annotations

import argparse
import sys

PROG = "rtx cfd"


def cfd_command(argv: list[str]) -> int:
    """Computational fluid dynamics: lid-driven cavity against Ghia et al. (1982)."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd")
    c = sub.add_parser("cavity", help="lid-driven cavity to steady state; centre lines beside Ghia et al.")
    c.add_argument("--re", type=float, default=100.0)
    c.add_argument("--n", type=int, default=129, help="grid lines per side (n - 1 cells)")
    c.add_argument("--tol", type=float, default=1e-6, help="steady residual max |du/dt| / lid velocity")
    c.add_argument("--lid-velocity", type=float, default=1.0)
    c.add_argument("--advection", choices=("central", "upwind", "quick", "sou"), default="central")
    c.add_argument("--time-scheme", choices=("ab2cn", "euler"), default="ab2cn",
                   help="ab2cn: Adams-Bashforth 2 advection + Crank-Nicolson diffusion; euler: explicit")
    c.add_argument("--cfl", type=float, default=None, help="fraction of the stable time step")
    c.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (default 1: the 128x128 products of the Poisson solve run fastest on one)")
    c.add_argument("--out", default=None, help="PNG: speed and streamlines")
    c.add_argument("--vtk", default=None, help="legacy VTK file of the fields")
    args = p.parse_args(argv)
    if args.cmd is None:
        p.print_usage(sys.stderr)
        print(f"{PROG}: error: a case is required (cavity)", file=sys.stderr)
        return 2
    import rtx
    import rtx.cfd as cfd

    rtx.set_num_threads(args.threads)
    try:
        flow = cfd.cavity(args.re, n=args.n, tol=args.tol, lid_velocity=args.lid_velocity, advection=args.advection,
                          time_scheme=args.time_scheme, cfl=args.cfl)
    except ValueError as e:
        print(f"{PROG} cavity: error: {e}", file=sys.stderr)
        return 1
    s = flow.stats
    print(f"cavity Re={args.re:g} n={args.n}: {s['steps']} steps, t={s['t']:.2f}, residual {s['residual']:.2e}, "
          f"{s['wall_time']:.1f} s ({s['time_per_step'] * 1e3:.2f} ms/step)")
    if int(args.re) in cfd.ghia.U and float(args.re) == int(args.re):
        d = cfd.ghia.compare(flow, int(args.re), args.lid_velocity)
        print(f"{'y':>8} {'u':>9} {'u Ghia':>9}    {'x':>8} {'v':>9} {'v Ghia':>9}")
        for k in range(len(d["y"])):
            print(f"{d['y'][k]:8.4f} {d['u'][k]:9.5f} {d['u_ghia'][k]:9.5f}    "
                  f"{d['x'][k]:8.4f} {d['v'][k]:9.5f} {d['v_ghia'][k]:9.5f}")
        print(f"max deviation from Ghia et al. (1982), in lid velocities: u {d['max_dev_u']:.4f}, "
              f"v {d['max_dev_v']:.4f}")
    else:
        print(f"(Ghia et al.'s tables are stored for Re in {sorted(cfd.ghia.U)}: no comparison)")
    if args.out:
        flow.plot(args.out, title=f"lid-driven cavity, Re = {args.re:g}, {args.n - 1}x{args.n - 1} cells")
        print("wrote", args.out)
    if args.vtk:
        flow.to_vtk(args.vtk)
        print("wrote", args.vtk)
    return 0
