"""Graph auto-encoders (Kipf & Welling 2016): GAE, VGAE and the InnerProductDecoder."""
import numpy as np

import rtx
import rtx.nn as nn

from ...utils.sampling import negative_sampling

EPS = 1e-15
MAX_LOGSTD = 10


class InnerProductDecoder(nn.Module):
    """p(edge i–j) = sigmoid(z_i · z_j)."""

    def forward(self, z, edge_index, sigmoid=True):
        value = (z.index_select(0, edge_index[0]) * z.index_select(0, edge_index[1])).sum(1)
        return value.sigmoid() if sigmoid else value

    def forward_all(self, z, sigmoid=True):
        adj = z @ z.t()
        return adj.sigmoid() if sigmoid else adj


def _auc_ap(y, pred):
    # ROC AUC by ranks (ties averaged) and average precision as scikit-learn defines it.
    order = np.argsort(pred, kind="mergesort")
    ranks = np.empty(len(pred))
    sp = pred[order]
    i = 0
    while i < len(sp):
        j = i
        while j + 1 < len(sp) and sp[j + 1] == sp[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = y == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    auc = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    desc = np.argsort(-pred, kind="mergesort")
    ys, ps = y[desc], pred[desc]
    distinct = np.r_[np.nonzero(np.diff(ps))[0], len(ps) - 1]
    tps = np.cumsum(ys)[distinct]
    fps = 1 + distinct - tps
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    ap = float(np.sum(np.diff(np.r_[0, recall]) * precision))
    return float(auc), ap


class GAE(nn.Module):
    def __init__(self, encoder, decoder=None):
        super().__init__()
        self.encoder = encoder
        self.decoder = InnerProductDecoder() if decoder is None else decoder

    def reset_parameters(self):
        for m in (self.encoder, self.decoder):
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()

    def forward(self, *args, **kwargs):
        return self.encoder(*args, **kwargs)

    def encode(self, *args, **kwargs):
        return self.encoder(*args, **kwargs)

    def decode(self, *args, **kwargs):
        return self.decoder(*args, **kwargs)

    def recon_loss(self, z, pos_edge_index, neg_edge_index=None):
        """Binary cross-entropy of the decoder on the positive edges and on sampled negative edges."""
        pos_loss = -(self.decoder(z, pos_edge_index, sigmoid=True) + EPS).log().mean()
        if neg_edge_index is None:
            neg_edge_index = negative_sampling(pos_edge_index, z.shape[0])
        neg_loss = -(1 - self.decoder(z, neg_edge_index, sigmoid=True) + EPS).log().mean()
        return pos_loss + neg_loss

    def test(self, z, pos_edge_index, neg_edge_index):
        """(ROC AUC, average precision) of the decoder separating positive from negative edges."""
        with rtx.no_grad():
            pos = self.decoder(z, pos_edge_index, sigmoid=True).cpu().numpy()
            neg = self.decoder(z, neg_edge_index, sigmoid=True).cpu().numpy()
        y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
        return _auc_ap(y, np.r_[pos, neg])


class VGAE(GAE):
    """The encoder returns (mu, logstd); z is sampled in training and mu at evaluation."""

    def reparametrize(self, mu, logstd):
        if self.training:
            return mu + rtx.randn_like(logstd) * logstd.exp()
        return mu

    def encode(self, *args, **kwargs):
        self.__mu__, self.__logstd__ = self.encoder(*args, **kwargs)
        self.__logstd__ = self.__logstd__.clamp(max=MAX_LOGSTD)
        return self.reparametrize(self.__mu__, self.__logstd__)

    def kl_loss(self, mu=None, logstd=None):
        mu = self.__mu__ if mu is None else mu
        logstd = self.__logstd__ if logstd is None else logstd.clamp(max=MAX_LOGSTD)
        return -0.5 * (1 + 2 * logstd - mu ** 2 - logstd.exp() ** 2).sum(1).mean()
