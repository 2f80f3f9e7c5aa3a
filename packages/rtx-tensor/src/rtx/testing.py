"""rtx.testing, as torch.testing: assert_close, plus the op-table helpers of the test suites."""
from rtx._tensor.testing import OpCase, assert_close, check_case, devices  # noqa: F401
