"""CUDA's ``torch.autocast`` replayed on fake CPU tensors, so that :mod:`.record` can record a module as mixed
precision runs it: fp32 weights, each op in the dtype autocast gives it.

Fake tensors on a CUDA device do not run autograd in a CPU build of PyTorch, and the CPU's own autocast has other op
lists, so the CUDA lists are applied here, above autograd (a ``TorchFunctionMode``: the casts it makes are ops
autograd records, as autocast's are), by the name of each function called, from PyTorch's
``aten/src/ATen/autocast_mode.h`` (torch 2.13: ``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``,
``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_PROMOTE``; the tables of "Automatic Mixed Precision package",
pytorch docs amp.html, "CUDA Op-Specific Behavior"):

- **lower precision** (linears, matrix products, convolutions, SDPA): every floating input cast to the 16-bit
  dtype; a cast of a leaf tensor that takes gradients (a trained weight) is cached and reused until the region
  exits (autocast_mode.cpp ``cached_cast``: ``arg.is_leaf() && arg.requires_grad()``; ``torch.autocast.__exit__``
  clears the cache), after which only the copies autograd saved for the backward live on;
- **fp32** (layer and group norms, the losses, ``exp``, ``pow``, ``rsqrt``...): every 16-bit input cast to fp32;
- **fp32 output dtype** (``softmax``, ``log_softmax``, ``sum``, ``prod``, ``cumsum``, ``cumprod``): called with
  ``dtype=float32`` when none is given;
- **promote** (``addcmul``, ``addcdiv``, ``cat``-like ops of mixed inputs): inputs cast to the widest;
- everything else runs in the dtype its inputs have (an fp32 residual plus a 16-bit output is fp32: type
  promotion).
"""

from __future__ import annotations

from typing import Any

# autocast_mode.h, torch 2.13 (the function names PyTorch's Python API calls them by)
LOWER = frozenset((
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "__matmul__", "__rmatmul__",
    "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "scaled_dot_product_attention"))
FP32 = frozenset((
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "tan", "pow", "__pow__", "__rpow__", "softplus", "layer_norm", "native_layer_norm", "rms_norm", "group_norm",
    "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp"))
FP32_OUTPUT = frozenset(("prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum", "linalg_vector_norm",
                         "linalg_matrix_norm"))
PROMOTE = frozenset(("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
                     "tensordot", "scatter_add"))


def mode(dtype: str = "float16"):
    """A fresh ``TorchFunctionMode`` replaying CUDA autocast to ``dtype`` (see the module docstring)."""
    import torch
    from torch.overrides import TorchFunctionMode

    low = getattr(torch, dtype)

    class Autocast(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.cache: dict[int, Any] = {}

        def __exit__(self, *exc):
            self.cache.clear()
            return super().__exit__(*exc)

        def cast(self, value, to):
            if isinstance(value, (list, tuple)):
                return type(value)(self.cast(v, to) for v in value)
            if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.dtype in (to,
                                                                                                        torch.float64):
                return value
            if to is low and value.is_leaf and value.requires_grad:
                found = self.cache.get(id(value))
                if found is None:
                    found = value.to(to)
                    self.cache[id(value)] = found
                return found
            return value.to(to)

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            name = getattr(func, "__name__", "")
            to = low if name in LOWER else torch.float32 if name in FP32 else None
            if name in PROMOTE:
                widths = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)
                          and a.is_floating_point()]
                to = torch.float32 if torch.float32 in widths else None
            if to is not None:
                args = tuple(self.cast(a, to) for a in args)
                kwargs = {k: self.cast(v, to) for k, v in kwargs.items()}
            elif name in FP32_OUTPUT and kwargs.get("dtype") is None and args and isinstance(args[0], torch.Tensor) \
                    and args[0].dtype == low:
                kwargs["dtype"] = torch.float32
            return func(*args, **kwargs)

    return Autocast()
