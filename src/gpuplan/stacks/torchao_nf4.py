"""torchtune 0.1 QLoRA on one GPU: model init, request by request, replayed on the caching allocator.

torchtune 0.1 pinned ``torchao==0.1``, whose ``NF4Tensor`` quantizes a weight in one piece (pytorch/ao tag v0.1,
``torchao/dtypes/nf4tensor.py``); torchao 0.2 quantizes in chunks of 1024**2 elements (pytorch/ao 6081796b,
2024-05-01). What the recipe does at init (pytorch/torchtune tag v0.1.0), every tensor on the GPU:

1. ``lora_llama2`` (``models/llama2/_component_builders.py``) builds ONE decoder layer under the CUDA device and
   bf16: each ``LoRALinear`` (``modules/peft/lora.py``) makes an ``nn.Linear`` weight, ``to_nf4`` quantizes it and
   the bf16 weight is freed, then ``lora_a`` and ``lora_b``; the rotary cache; the norms. Then the embedding, the
   output projection and the final norm;
2. ``TransformerDecoder`` (``modules/transformer.py`` ``_get_clones``) deep-copies that layer ``num_layers`` times.
   ``Tensor.__deepcopy__`` clones a wrapper subclass (``data_ptr() == 0``): torchtune's ``clone`` dispatch
   (``utils/_register_nf4_dispatch_ops.py``) is ``to_nf4(get_original_weight())``, a dequantization and a new
   quantization; then ``new_tensor.__dict__ = deepcopy(self.__dict__)`` copies the source's packed tensors and
   frees the ones the clone just made. The template layer is freed when the builder returns;
3. ``load_state_dict`` of the checkpoint (on the CPU, in its own dtype: float16 for Llama-2's) copies into each
   NF4 weight through torchtune's ``inplace_copy`` dispatch: ``to_nf4(src.to(device))``, which casts to bf16 on
   the GPU, quantizes, and swaps the new packed tensors in. Plain weights are copied in place (a blocking
   host-to-device copy converts on the CPU: no GPU temporary).

torchao 0.1's ``to_nf4`` on ``n`` bf16 elements (blocks of 64, scaler blocks of 256), in order, with each
temporary's life: ``get_block_absmax`` (``abs`` 2n bytes; ``max(dim=1)`` values and int64 indices), the scalers'
double quantization (about 2n/64 bytes a step), ``blocks / scales`` (2n), ``quantize_tensor_nearest``:
``value.unsqueeze(-1) - nf4`` (32n) and its ``abs()`` (32n) at once, ``min(dim=-1)`` (2n values, 8n int64
indices), then ``indices[::2] << 4 | indices[1::2]`` (4n + 4n) and ``.to(uint8)`` (n/2, kept). What stays: the
packed data (n/2), the int8 scalers (n/64), the scaler factors (2n/64: ``256 / (2 * absmax)`` of an expanded view
materializes one per block and ``[:, 0]`` keeps that storage), the mean and the 16-value table.
``get_original_weight``: two int64 index tensors (4n each), two table lookups (n each), the block scalers
expanded and flattened (n each, twice), the two products (n each) and ``torch.stack`` (2n, the bf16 weight).
These sequences were checked against the real code: ``bench/replay_check_torchtune01.py`` runs torchtune v0.1.0's
builder and ``load_state_dict`` with torchao v0.1 on CPU tensors under a dispatch mode that feeds each storage to
the allocator model, and gets the replay's reserved bytes to the byte (4 and 12 layers).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.allocator import Block, CachingAllocator
from ..tensors.state import lora_targets

BLOCK, SCALER_BLOCK = 64, 256  # to_nf4's defaults
TORCHTUNE_ORDER = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "down_proj", "up_proj")  # w1, w2, w3


@dataclass(frozen=True)
class Layout:
    """What the replay needs of the model: each decoder linear (name, in, out, quantized) in torchtune's
    construction order, the norms, the rotary cache and the embedding/head sizes (elements)."""

    linears: tuple[tuple[str, int, int, bool], ...]
    num_layers: int
    hidden: int
    vocab: int
    head_dim: int
    max_seq_len: int
    lora_rank: int
    checkpoint_bf16: bool  # the checkpoint's dtype: a float16 one is cast on the GPU before quantizing
    tied: bool = False  # the output projection is the embedding (gemma): no tensor of its own


def nf4_layout(s: Scenario, m: ModelSpec) -> Layout | None:
    """The replay's view of ``m`` under ``s``: torchtune 0.1 clones one decoder layer (the first), builds its
    linears in the order of ``TORCHTUNE_ORDER`` and quantizes those LoRA adapts; the rotary cache spans the
    model's context (``max_seq_len`` of the llama2 builders). None for a layer torchtune 0.1 had no builder for
    (fused projections, experts): no replay."""
    layer = m.layers[0]
    if {lin.name for lin in layer.linears} != set(TORCHTUNE_ORDER) or any(lin.count > 1 for lin in layer.linears):
        return None
    order = {name: i for i, name in enumerate(TORCHTUNE_ORDER)}
    targets = lora_targets(s, m)
    linears = sorted(layer.linears, key=lambda lin: order[lin.name])
    return Layout(linears=tuple((lin.name, lin.in_features, lin.out_features, lin.name in targets)
                                for lin in linears),
                  num_layers=m.num_layers, hidden=m.hidden_size, vocab=m.vocab_size, head_dim=m.head_dim,
                  max_seq_len=m.max_context or 4096, lora_rank=s.lora_rank, checkpoint_bf16=m.dtype == "bfloat16",
                  tied=m.tie_word_embeddings)


class Heap:
    """The allocator with None for empty tensors (no request) and several frees at once."""

    def __init__(self) -> None:
        self.a = CachingAllocator()

    def new(self, nbytes: float) -> Block | None:
        return self.a.malloc(int(nbytes)) if nbytes > 0 else None

    def drop(self, *blocks: Block | None) -> None:
        for b in blocks:
            if b is not None:
                self.a.free(b)


def _block_absmax(h: Heap, n: int, block: int) -> Block | None:
    """``get_block_absmax``: ``blocks.abs().max(dim=1).values`` on n bf16 elements."""
    t = h.new(2 * n)
    values, indices = h.new(2 * (n // block)), h.new(8 * (n // block))
    h.drop(t, indices)
    return values


def to_nf4(h: Heap, n: int) -> list[Block | None]:
    """torchao 0.1 ``NF4Tensor.from_tensor`` on n bf16 elements the caller holds; returns the kept tensors in the
    order of the tensor's ``__dict__`` (scalers, factors, mean, data, table)."""
    blocks = n // BLOCK
    table = h.new(32)
    # double_quantize_scalers
    s1 = _block_absmax(h, n, BLOCK)
    mean = h.new(2)
    centred = h.new(2 * blocks)
    h.drop(s1)
    absmax = _block_absmax(h, blocks, SCALER_BLOCK)
    twice = h.new(2 * blocks)  # 256 / (2 * absmax) runs as 256 * (2 * absmax).reciprocal()
    reciprocal = h.new(2 * blocks)
    factors = h.new(2 * blocks)
    h.drop(twice, reciprocal)
    scaled = h.new(2 * blocks)
    rounded = h.new(2 * blocks)
    h.drop(scaled)
    clamped = h.new(2 * blocks)
    h.drop(rounded)
    scalers = h.new(blocks)
    h.drop(centred, absmax, clamped)
    # convert_to_norm_float_weight
    absmax = _block_absmax(h, n, BLOCK)
    scaled = h.new(2 * n)
    diff = h.new(32 * n)
    dist = h.new(32 * n)
    h.drop(diff)
    values, nearest = h.new(2 * n), h.new(8 * n)
    h.drop(values, dist)
    shifted = h.new(4 * n)
    combined = h.new(4 * n)
    h.drop(shifted)
    data = h.new(n // 2)
    h.drop(absmax, scaled, nearest, combined)
    return [scalers, factors, mean, data, table]


def _kept_sizes(n: int) -> list[int]:
    blocks = n // BLOCK
    return [blocks, 2 * blocks, 2, n // 2, 32]


def get_original_weight(h: Heap, n: int) -> Block | None:
    """torchao 0.1 ``NF4Tensor.get_original_weight``: the bf16 weight (returned) and its temporaries."""
    blocks = n // BLOCK
    t = h.new(n // 2)
    first = h.new(4 * n)
    h.drop(t)
    t = h.new(n // 2)
    second = h.new(4 * n)
    h.drop(t)
    dq_first, dq_second = h.new(n), h.new(n)
    t = h.new(2 * blocks)
    scalers = h.new(2 * blocks)
    h.drop(t)
    products = []
    for _ in (dq_first, dq_second):  # dq * repeated.flatten(): the flattened scalers, then the product
        repeated = h.new(n)
        products.append(h.new(n))
        h.drop(repeated)
    weight = h.new(2 * n)
    h.drop(first, second, dq_first, dq_second, scalers, *products)
    return weight


def _lora_linear(h: Heap, lay: Layout, n_in: int, n_out: int, quantized: bool) -> list[Block | None]:
    """``LoRALinear.__init__`` (``quantize_base``): the base weight, quantized and its bf16 source freed, then
    lora_a and lora_b; a linear LoRA does not adapt stays a plain bf16 ``nn.Linear``."""
    n = n_in * n_out
    weight = h.new(2 * n)
    if not quantized:
        return [weight]
    kept = to_nf4(h, n)
    h.drop(weight)
    return [*kept, h.new(2 * lay.lora_rank * n_in), h.new(2 * n_out * lay.lora_rank)]


def _rope(h: Heap, lay: Layout) -> list[Block | None]:
    """``RotaryPositionalEmbeddings._rope_init``: theta (fp32) and the (max_seq_len, dim/2, 2) fp32 cache."""
    half = lay.head_dim // 2
    steps = h.new(8 * half)  # arange (int64)
    f = h.new(4 * half)
    h.drop(steps)
    for _ in range(2):  # / dim, base **
        g = h.new(4 * half)
        h.drop(f)
        f = g
    theta = h.new(4 * half)
    h.drop(f)
    positions = h.new(4 * lay.max_seq_len)
    angles = h.new(4 * lay.max_seq_len * half)
    cos, sin = h.new(4 * lay.max_seq_len * half), h.new(4 * lay.max_seq_len * half)
    cache = h.new(8 * lay.max_seq_len * half)
    h.drop(cos, sin, positions, angles)
    return [theta, cache]


def _template_layer(h: Heap, lay: Layout) -> tuple[list[list[Block | None]], list[Block | None]]:
    """The one layer ``lora_llama2`` builds: linears (attention ones, then the rotary cache, then the MLP's),
    then the two norms. Returns each linear's blocks and the other blocks in deep-copy order."""
    linears = []
    for name, n_in, n_out, quantized in lay.linears:
        linears.append(_lora_linear(h, lay, n_in, n_out, quantized))
        if name == "o_proj":
            rope = _rope(h, lay)
    norms = [h.new(2 * lay.hidden), h.new(2 * lay.hidden)]
    return linears, rope + norms


def _deepcopy_tensor(h: Heap, nbytes: int) -> Block | None:
    """``Tensor.__deepcopy__`` of a plain tensor: its storage cloned, then ``new_empty([])`` (one element, a
    512-byte block) ``set_`` onto that storage, which frees the element."""
    copy = h.new(nbytes)
    h.drop(h.new(1))
    return copy


def _deepcopy_layer(h: Heap, lay: Layout) -> list[list[Block | None]]:
    """``copy.deepcopy`` of the layer, module by module: sa_norm, the attention's linears and rotary buffers,
    mlp_norm, the MLP's linears. An NF4 weight is cloned (dequantize + quantize) and its packed tensors are then
    replaced by copies of the source's."""
    new = []

    def copy_linear(i: int) -> None:
        _, n_in, n_out, quantized = lay.linears[i]
        n = n_in * n_out
        if not quantized:
            new.append([h.new(2 * n)])
            return
        weight = get_original_weight(h, n)
        cloned = to_nf4(h, n)
        h.drop(weight)
        kept = [_deepcopy_tensor(h, size) for size in _kept_sizes(n)]
        h.drop(*cloned)
        new.append([*kept, h.new(2 * lay.lora_rank * n_in), h.new(2 * n_out * lay.lora_rank)])

    h.new(2 * lay.hidden)  # sa_norm
    attention = [i for i, lin in enumerate(lay.linears) if lin[0] in TORCHTUNE_ORDER[:4]]
    for i in attention:
        copy_linear(i)
    _deepcopy_tensor(h, 4 * (lay.head_dim // 2))  # theta
    _deepcopy_tensor(h, 8 * lay.max_seq_len * (lay.head_dim // 2))  # cache
    h.new(2 * lay.hidden)  # mlp_norm
    for i in range(len(lay.linears)):
        if i not in attention:
            copy_linear(i)
    return new


def _load(h: Heap, lay: Layout, linears: list[list[Block | None]]) -> None:
    """``load_state_dict`` into one layer's NF4 weights: ``to_nf4(src.to(device))`` then the swap."""
    for i, (_, n_in, n_out, quantized) in enumerate(lay.linears):
        if not quantized:
            continue
        n = n_in * n_out
        src = h.new(2 * n)
        cast = None if lay.checkpoint_bf16 else h.new(2 * n)
        new = to_nf4(h, n)
        h.drop(cast, src)
        h.drop(*linears[i][:5])
        linears[i][:5] = new


def init_heap(lay: Layout) -> Heap:
    """The allocator once the recipe has built and loaded the model (``Memory Stats after model init``)."""
    h = Heap()
    linears, others = _template_layer(h, lay)
    h.new(2 * lay.vocab * lay.hidden)  # tok_embeddings
    if not lay.tied:
        h.new(2 * lay.vocab * lay.hidden)  # output
    h.new(2 * lay.hidden)  # norm
    layers = [_deepcopy_layer(h, lay) for _ in range(lay.num_layers)]
    h.drop(*[b for blocks in linears for b in blocks], *others)  # the template, when the builder returns
    for layer in layers:
        _load(h, lay, layer)
    return h
