"""spmm: sum of weighted neighbour rows, out[i] = sum_e w_e * x[col_e] over edges e with row_e = i.

This is message passing's "x_j * edge_weight, aggregate add" fused into one sparse-matrix product
(PyG's message_and_aggregate, DGL's SpMM): no [E, F] message tensor is built, memory stays O(E + N·F).
CPU uses SciPy's CSR kernels, CUDA cupyx's. The backward is the transposed product for x and a
row-wise dot for the weights, both in Tensor ops, so double backward works.
"""
import numpy as np

from rtx.extend import Primitive, raw, wrap, xp_of


def _csr(xp, data, row, col, shape):
    if xp is np:
        import scipy.sparse as sp
    else:
        import cupyx.scipy.sparse as sp
    return sp.csr_matrix((data, (row, col)), shape=shape)


class SpMM(Primitive):
    op = "geom.spmm"

    @staticmethod
    def forward(ctx, weight, x, *, row, col, num_rows):
        xa = raw(x)
        xp = xp_of(x)
        w = raw(weight) if weight is not None else xp.ones(row.shape[0], dtype=xa.dtype)
        a = _csr(xp, w.astype(xa.dtype, copy=False), row, col, (num_rows, xa.shape[0]))
        ctx.save_for_backward(weight, x)
        ctx.row, ctx.col, ctx.num_rows = row, col, num_rows
        flat = xa.reshape(xa.shape[0], -1)
        return xp.ascontiguousarray((a @ flat).reshape((num_rows,) + xa.shape[1:]))

    @staticmethod
    def backward(ctx, grad):
        weight, x = ctx.saved_tensors
        gw_needed, gx_needed = ctx.needs_input_grad
        gx = gw = None
        if gx_needed:
            gx = SpMM.apply(weight, grad, row=ctx.col, col=ctx.row, num_rows=x.shape[0])
        if gw_needed:
            row, col = wrap(ctx.row), wrap(ctx.col)
            prod = grad.index_select(0, row) * x.index_select(0, col)
            gw = prod.reshape(prod.shape[0], -1).sum(1)
        return gw, gx


def spmm(edge_index, x, edge_weight=None, num_nodes=None, reduce="sum"):
    """out[i] = ⊕_{(j, i) in edges} w_ji * x[j], ⊕ sum or mean, edges given as edge_index [2, E] (source, target).

    num_nodes is the number of targets (defaults to x.shape[0])."""
    if reduce not in ("sum", "add", "mean"):
        raise ValueError(f"spmm(): reduce must be 'sum' or 'mean', got {reduce!r}")
    n = x.shape[0] if num_nodes is None else int(num_nodes)
    src, dst = raw(edge_index)[0], raw(edge_index)[1]
    if edge_weight is not None and edge_weight.dtype != x.dtype:
        edge_weight = edge_weight.to(x.dtype)
    out = SpMM.apply(edge_weight, x, row=dst, col=src, num_rows=n)
    if reduce == "mean":
        xp = xp_of(x)
        count = xp.bincount(dst, minlength=n).astype(raw(x).dtype)
        out = out / wrap(xp.maximum(count, 1).reshape((n,) + (1,) * (x.dim() - 1)))
    return out


__all__ = ["spmm", "SpMM"]

