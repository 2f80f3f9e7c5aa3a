"""Model families with torchvision's constructor names, module names and state_dict keys, one
family per file. rtx ships no pretrained weights: build with weights=None and load a torchvision
checkpoint you have with model.load_state_dict(rtx.load(path))."""
# ruff: noqa: F401,F403
from rtx.vision.models.efficientnet import *
from rtx.vision.models.lenet import *
from rtx.vision.models.mobilenetv2 import *
from rtx.vision.models.resnet import *
from rtx.vision.models.vgg import *
from rtx.vision.models.vision_transformer import *

_BUILDERS = ("lenet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
             "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "wide_resnet50_2",
             "mobilenet_v2", "efficientnet_b0", "efficientnet_b1", "vit_t_16", "vit_s_16", "vit_b_16", "vit_b_32")


def list_models():
    """Names of every model builder (as torchvision.models.list_models)."""
    return sorted(_BUILDERS)


def get_model(name, **config):
    """Build a model by name: get_model("resnet18", num_classes=10) (as torchvision.models.get_model)."""
    if name not in _BUILDERS:
        raise ValueError(f"Unknown model {name!r}; available: {', '.join(sorted(_BUILDERS))}")
    return globals()[name](**config)
