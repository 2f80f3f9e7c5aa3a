"""rtx losses: PyTorch's loss functions and modules, numerically stable for large logits;
also reachable as rtx.nn.CrossEntropyLoss and rtx.nn.functional.cross_entropy."""
__version__ = "0.1.0"

from rtx.losses import functional  # noqa: F401
from rtx.losses.modules import (  # noqa: F401
                                BCELoss,
                                BCEWithLogitsLoss,
                                CosineEmbeddingLoss,
                                CrossEntropyLoss,
                                CTCLoss,
                                FocalLoss,
                                GaussianNLLLoss,
                                HingeEmbeddingLoss,
                                HuberLoss,
                                KLDivLoss,
                                L1Loss,
                                MarginRankingLoss,
                                MSELoss,
                                MultiLabelSoftMarginLoss,
                                MultiMarginLoss,
                                NLLLoss,
                                PoissonNLLLoss,
                                SmoothL1Loss,
                                SoftMarginLoss,
                                TripletMarginLoss,
                                TripletMarginWithDistanceLoss,
)
