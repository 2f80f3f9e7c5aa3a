"""rtx preprocessing: transforms for arrays and tensors, scalers and encoders with
fit/transform, seeded (stratified) splits, and augmentations usable from DataLoader workers."""
__version__ = "0.1.0"

from rtx.preprocessing.scalers import LabelEncoder, MinMaxScaler, OneHotEncoder, StandardScaler  # noqa: F401
from rtx.preprocessing.split import train_test_split, train_val_test_split  # noqa: F401
from rtx.preprocessing.transforms import Compose, Lambda, Normalize, RandomFlip, RandomNoise, RandomShift, ToTensor  # noqa: F401
