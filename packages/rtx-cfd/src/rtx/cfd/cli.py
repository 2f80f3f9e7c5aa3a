"""`rtx cfd`: run a classic case and compare it with the literature.

    rtx cfd cavity --re 100 --n 129 --out cavity.png
    rtx cfd lbm-cavity --re 100 --n 129 --out lbm_cavity.png
    rtx cfd cylinder --re 100 --out cylinder.png

Exit status: 0 on success, 1 on an error, 2 on a usage error."""
from __future__ import annotations

import argparse
import sys

PROG = "rtx cfd"


def cfd_command(argv: list[str]) -> int:
    """Computational fluid dynamics: lid-driven cavity against Ghia et al. (1982), cylinder wake."""
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
    lb = sub.add_parser("lbm-cavity", help="lattice Boltzmann (D2Q9 BGK) cavity; centre lines beside Ghia et al.")
    lb.add_argument("--re", type=float, default=100.0)
    lb.add_argument("--n", type=int, default=129, help="fluid nodes per side")
    lb.add_argument("--lid-velocity", type=float, default=0.1, help="lid speed in lattice units (Mach number x 0.58)")
    lb.add_argument("--lid", choices=("bounce-back", "zou-he"), default="bounce-back")
    lb.add_argument("--tol", type=float, default=1e-9, help="steady residual max |du| per step / lid velocity")
    lb.add_argument("--max-steps", type=int, default=200_000)
    lb.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                    help="float32 runs about 3x faster on the CPU; its rounding floors the residual near 1e-8")
    lb.add_argument("--out", default=None, help="PNG: speed and streamlines")
    cy = sub.add_parser("cylinder", help="flow past a circular cylinder; Strouhal number of the wake")
    cy.add_argument("--re", type=float, default=100.0)
    cy.add_argument("--cells-per-d", type=int, default=12, help="grid cells per cylinder diameter")
    cy.add_argument("--length", type=float, default=24.0, help="channel length in diameters (cylinder at a third)")
    cy.add_argument("--height", type=float, default=16.0, help="channel height in diameters")
    cy.add_argument("--t-end", type=float, default=150.0, help="end time in D / U")
    cy.add_argument("--cfl", type=float, default=0.5)
    cy.add_argument("--progress", type=int, default=0, help="print the time every N steps (0: never)")
    cy.add_argument("--out", default=None, help="PNG: speed and streamlines at the end")
    for q in (lb, cy):
        q.add_argument("--threads", type=int, default=1, help="BLAS threads")
    args = p.parse_args(argv)
    if args.cmd is None:
        p.print_usage(sys.stderr)
        print(f"{PROG}: error: a case is required (cavity, lbm-cavity, cylinder)", file=sys.stderr)
        return 2
    import rtx
    import rtx.cfd as cfd

    rtx.set_num_threads(args.threads)
    if args.cmd == "lbm-cavity":
        return _lbm_cavity(args, cfd)
    if args.cmd == "cylinder":
        return _cylinder(args, cfd)
    try:
        flow = cfd.cavity(args.re, n=args.n, tol=args.tol, lid_velocity=args.lid_velocity, advection=args.advection,
                          time_scheme=args.time_scheme, cfl=args.cfl)
    except ValueError as e:
        print(f"{PROG} cavity: error: {e}", file=sys.stderr)
        return 1
    s = flow.stats
    print(f"cavity Re={args.re:g} n={args.n}: {s['steps']} steps, t={s['t']:.2f}, residual {s['residual']:.2e}, "
          f"{s['wall_time']:.1f} s ({s['time_per_step'] * 1e3:.2f} ms/step)")
    _ghia_table(cfd, flow, args.re, args.lid_velocity)
    if args.out:
        flow.plot(args.out, title=f"lid-driven cavity, Re = {args.re:g}, {args.n - 1}x{args.n - 1} cells")
        print("wrote", args.out)
    if args.vtk:
        flow.to_vtk(args.vtk)
        print("wrote", args.vtk)
    return 0


def _ghia_table(cfd, flow, re, lid_velocity=1.0):
    if int(re) in cfd.ghia.U and float(re) == int(re):
        d = cfd.ghia.compare(flow, int(re), lid_velocity)
        print(f"{'y':>8} {'u':>9} {'u Ghia':>9}    {'x':>8} {'v':>9} {'v Ghia':>9}")
        for k in range(len(d["y"])):
            print(f"{d['y'][k]:8.4f} {d['u'][k]:9.5f} {d['u_ghia'][k]:9.5f}    "
                  f"{d['x'][k]:8.4f} {d['v'][k]:9.5f} {d['v_ghia'][k]:9.5f}")
        print(f"max deviation from Ghia et al. (1982), in lid velocities: u {d['max_dev_u']:.4f}, "
              f"v {d['max_dev_v']:.4f}")
    else:
        print(f"(Ghia et al.'s tables are stored for Re in {sorted(cfd.ghia.U)}: no comparison)")


def _lbm_cavity(args, cfd):
    import rtx

    try:
        flow = cfd.lbm_cavity(args.re, n=args.n, lid_velocity=args.lid_velocity, tol=args.tol,
                              max_steps=args.max_steps, lid=args.lid, dtype=getattr(rtx, args.dtype))
    except ValueError as e:
        print(f"{PROG} lbm-cavity: error: {e}", file=sys.stderr)
        return 1
    s = flow.stats
    print(f"LBM cavity Re={args.re:g} n={args.n} ({args.lid} lid {args.lid_velocity:g}, tau {s['tau']:.4f}): "
          f"{s['steps']} steps, residual {s['residual'] / args.lid_velocity:.2e}, {s['wall_time']:.1f} s "
          f"({s['mlups']:.2f} MLUPS)")
    # the lid velocity is already divided out: the flow is in units of the lid speed
    _ghia_table(cfd, flow, args.re, 1.0)
    if args.out:
        flow.plot(args.out, title=f"LBM D2Q9 cavity, Re = {args.re:g}, {args.n}x{args.n} nodes")
        print("wrote", args.out)
    return 0


def _cylinder(args, cfd):
    def progress(n, state):
        if args.progress and n % args.progress == 0:
            print(f"step {n} t={state.t:.2f}", flush=True)

    try:
        flow = cfd.cylinder(args.re, cells_per_d=args.cells_per_d, length=args.length, height=args.height,
                            t_end=args.t_end, cfl=args.cfl, callback=progress)
    except ValueError as e:
        print(f"{PROG} cylinder: error: {e}", file=sys.stderr)
        return 1
    s = flow.stats
    print(f"cylinder Re={args.re:g}, {len(flow.x)}x{len(flow.y)} cells ({args.cells_per_d} per diameter), "
          f"t_end {args.t_end:g}: {s['steps']} steps, {s['wall_time']:.1f} s ({s['time_per_step'] * 1e3:.1f} ms/step)")
    print(f"Strouhal number f D / U = {s['strouhal']:.4f} (wake probe, last half of the run)")
    if args.out:
        flow.plot(args.out, title=f"cylinder, Re = {args.re:g}, t = {flow.t:.1f}")
        print("wrote", args.out)
    return 0
