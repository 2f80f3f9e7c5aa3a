"""rtx.testing, as torch.testing: assert_close, plus the op-table helpers of the test suites."""
from rtx._tensor.testing import (  # noqa: F401
    OpCase,
    assert_close,
    assert_like_reference,
    check_case,
    check_edge_case,
    devices,
    load_edge_cases,
    run_while_working,
)
