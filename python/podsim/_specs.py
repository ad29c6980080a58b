"""System, Model and Layout: the CLI's spec strings, parsed by the library's own parsers."""

from . import _podsim
from ._cli import Error
from ._results import Record


class _Spec(Record):
    """A spec string and what the library parsed of it (as attributes, and in to_dict()).

    Passed to a command it is its string, exactly as given. Equal specs are equal strings.
    """

    __slots__ = ("spec",)
    _parse = None

    def __init__(self, spec):
        if isinstance(spec, type(self)):
            spec = spec.spec
        if not isinstance(spec, str):
            raise TypeError(f"{type(self).__name__} takes a str, not {type(spec).__name__}")
        try:
            parsed = type(self)._parse(spec)
        except ValueError as e:
            raise Error(str(e)) from None
        super().__init__(parsed)
        object.__setattr__(self, "spec", spec)

    def __reduce__(self):
        return type(self), (self.spec,)

    def __str__(self):
        return self.spec

    def __repr__(self):
        return f"{type(self).__name__}({self.spec!r})"

    def __eq__(self, other):
        if not isinstance(other, _Spec):
            return NotImplemented
        return type(self) is type(other) and self.spec == other.spec

    def __hash__(self):
        return hash((type(self).__name__, self.spec))


class System(_Spec):
    """SYSTEM (topology::ParseSystem), e.g. System('h100:16'), System('tpu-v5p:4x4x8').

    Attributes: name (the string), kind (tpu, gpu, ring, torus, switch), chips, vertices, links,
    chip (name, family, bf16_flops_per_s, hbm_bytes, hbm_bytes_per_s, scale_up_link_bytes_per_s,
    hop_latency_s, ...); tori also axes, shape, wraps, slices; GPU systems gpus_per_node, nodes,
    switch_levels, oversubscription.
    """

    __slots__ = ()
    _parse = staticmethod(_podsim.parse_system)


class Model(_Spec):
    """MODEL (workloads::ParseModel), e.g. Model('llama3-8b'), Model('custom:layers=4,...').

    Attributes: name, layers, d_model, ffn, heads, kv_heads, head_dim, vocab, gated_mlp,
    tied_embeddings, linear_biases, norm (rms or layer), learned_positions, dropout, and the
    parameter counts params, params_per_layer, embedding_params, unembedding_params,
    matmul_params.
    """

    __slots__ = ()
    _parse = staticmethod(_podsim.parse_model)


class Layout(_Spec):
    """A training layout (workloads::ParseLayout), e.g. Layout('tp=8,dp=2').

    Attributes: text (the canonical form), dp, fsdp, tp, pp, cp, ep, etp (None when not stated),
    sp, chips, microbatches and micro_batch_size (None when not stated), schedule,
    virtual_stages, order. Only the text is
    checked here; the command checks it against the model, system and batch.
    """

    __slots__ = ()
    _parse = staticmethod(_podsim.parse_layout)


class InferenceLayout(_Spec):
    """An inference layout (workloads::ParseInferenceLayout), e.g. InferenceLayout('tp=8,dp=2').

    Attributes: text (the canonical form), tp, tp2, dp, kv_shard, chips.
    """

    __slots__ = ()
    _parse = staticmethod(_podsim.parse_inference_layout)
