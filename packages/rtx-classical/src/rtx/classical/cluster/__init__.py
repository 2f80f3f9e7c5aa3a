"""Clustering, mirroring sklearn.cluster."""
from rtx.classical.cluster._dbscan import DBSCAN
from rtx.classical.cluster._kmeans import KMeans, MiniBatchKMeans

__all__ = ["DBSCAN", "KMeans", "MiniBatchKMeans"]
