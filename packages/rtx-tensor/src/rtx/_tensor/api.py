"""Everything `import rtx` exposes at the top level, PyTorch's names."""
# ruff: noqa: F401
from rtx._tensor import methods as _methods  # attaches ops to Tensor
from rtx._tensor.ops.activation import log_softmax, softmax
from rtx._tensor.ops.arith import (
    add,
    addcdiv,
    addcmul,
    arctan2,
    atan2,
    copysign,
    div,
    divide,
    float_power,
    floor_divide,
    fmax,
    fmin,
    fmod,
    heaviside,
    hypot,
    lerp,
    logaddexp,
    logaddexp2,
    maximum,
    minimum,
    mul,
    multiply,
    pow,
    remainder,
    rsub,
    sub,
    subtract,
    true_divide,
    where,
    xlogy,
)
from rtx._tensor.ops.compare import (
    allclose,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    eq,
    equal,
    ge,
    greater,
    greater_equal,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    isneginf,
    isposinf,
    isreal,
    le,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    ne,
    not_equal,
    signbit,
)
from rtx._tensor.ops.convert import ToDevice as _ToDevice
from rtx._tensor.ops.creation import (
    arange,
    as_tensor,
    asarray,
    bernoulli,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    multinomial,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    tril_indices,
    triu_indices,
    zeros,
    zeros_like,
)
from rtx._tensor.ops.distance import cosine_similarity, pairwise_distance, pdist
from rtx._tensor.ops.index import *  # noqa: F403
from rtx._tensor.ops.linalg_ops import *  # noqa: F403
from rtx._tensor.ops.matmul import addmm, addmv, baddbmm, bmm, dot, ger, inner, matmul, mm, mv, outer, vdot
from rtx._tensor.ops.reduce import (
    all,
    amax,
    amin,
    aminmax,
    any,
    argmax,
    argmin,
    count_nonzero,
    cummax,
    cummin,
    cumprod,
    cumsum,
    logsumexp,
    max,
    mean,
    median,
    min,
    mode,
    nanmean,
    nanmedian,
    nansum,
    norm,
    prod,
    std,
    std_mean,
    sum,
    var,
    var_mean,
)
from rtx._tensor.ops.shape import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shapes,
    broadcast_tensors,
    broadcast_to,
    cat,
    chunk,
    clone,
    column_stack,
    concat,
    concatenate,
    diag,
    diag_embed,
    diagonal,
    dsplit,
    dstack,
    flatten,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    meshgrid,
    moveaxis,
    movedim,
    narrow,
    permute,
    ravel,
    reshape,
    roll,
    rot90,
    row_stack,
    select,
    split,
    squeeze,
    stack,
    swapaxes,
    swapdims,
    t,
    tensor_split,
    tile,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
    vsplit,
    vstack,
)
from rtx._tensor.ops.sort import *  # noqa: F403
from rtx._tensor.ops.unary import OPS as _UNARY
from rtx._tensor.ops.unary import (
    absolute,
    angle,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctanh,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    conj,
    conj_physical,
    fix,
    imag,
    negative,
    real,
    resolve_conj,
    resolve_neg,
    round,
)
from rtx._tensor.printing import set_printoptions
from rtx._tensor.serialization import load, save
from rtx._tensor.tensor import Size, Tensor
from rtx.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from rtx.runtime import (
    Generator,
    device,
    get_default_device,
    get_default_dtype,
    initial_seed,
    manual_seed,
    promote_types,
    seed,
    set_default_device,
    set_default_dtype,
)
from rtx.runtime.dtypes import (
    bfloat16,
    bool_,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    qint8,  # quantized dtypes name integer ranges for rtx.compress; no tensor has them
    qint32,
    quint4x2,
    quint8,
    short,
    uint8,
    uint16,
    uint32,
    uint64,
)
from rtx.runtime.dtypes import bool_ as bool  # noqa: A001
from rtx.runtime.dtypes import float32 as float  # noqa: A001  (torch.float is float32)
from rtx.runtime.dtypes import int32 as int  # noqa: A001  (torch.int is int32)
from rtx.runtime.random import default_generator, get_rng_state, set_rng_state

globals().update(_UNARY)


def is_tensor(obj):
    return type(obj) is Tensor


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


def result_type(tensor1, tensor2):
    from rtx.runtime.dtypes import result_type_of
    ops = [tensor1, tensor2]
    dims_ = [o.dtype for o in ops if type(o) is Tensor and o.ndim]
    zeros_ = [o.dtype for o in ops if type(o) is Tensor and not o.ndim]
    scalars = [o for o in ops if type(o) is not Tensor]
    return result_type_of(dims_, zeros_, scalars)


def can_cast(from_, to):
    from rtx.runtime.dtypes import can_cast as _can_cast
    return _can_cast(from_, to)
