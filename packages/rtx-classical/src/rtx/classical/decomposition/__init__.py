"""Matrix decompositions, mirroring sklearn.decomposition."""
from rtx.classical.decomposition._incremental_pca import IncrementalPCA
from rtx.classical.decomposition._pca import PCA
from rtx.classical.decomposition._truncated_svd import TruncatedSVD

__all__ = ["IncrementalPCA", "PCA", "TruncatedSVD"]
