"""rtx monitoring: Prometheus metrics for serving, CSV and TensorBoard logging for training.

    from rtx.monitoring import ServingMetrics, TrainingLogger
    m = ServingMetrics()                       # its own CollectorRegistry
    m.observe_request("resnet", "1.0.0", "v2", 200, 0.004)
    body, content_type = m.exposition()        # GET /metrics

    with TrainingLogger("runs/exp1") as logger:   # metrics.csv + TensorBoard events + a progress bar
        logger.log(step, loss=0.25, lr=1e-3)
"""
__version__ = "0.1.0"

from rtx.monitoring.serving import BATCH_SIZE_BUCKETS, LATENCY_BUCKETS, ServingMetrics
from rtx.monitoring.training import TrainingLogger

__all__ = ["ServingMetrics", "TrainingLogger", "LATENCY_BUCKETS", "BATCH_SIZE_BUCKETS"]
