"""Token-budget arithmetic (the seed primer's formulas), plain functions.

- Mixture: a source with weight w_i and N_i curated tokens is seen epochs_i = w_i * D / N_i
  times in a budget of D tokens.
- Chinchilla (Hoffmann et al. 2022): compute-optimal training uses about 20 tokens per
  parameter, so D tokens suit N = D / 20 parameters; training costs C = 6 N D FLOPs.
- Memory: mixed-precision Adam keeps 16 bytes per parameter (2 weights + 2 gradients + 12
  optimizer state: fp32 master weights, momentum, variance); ZeRO (Rajbhandari et al. 2020)
  shards the optimizer state (stage 1), then gradients (2), then weights (3) over G GPUs.
"""

from __future__ import annotations

TOKENS_PER_PARAM = 20  # Chinchilla
GB = 1e9


def epochs(weights: dict[str, float], available: dict[str, float], total: float):
    """{source: w_i * D / N_i}."""
    return {s: weights[s] * total / available[s] for s in weights}


def chinchilla_tokens(params: float) -> float:
    return TOKENS_PER_PARAM * params


def chinchilla_params(tokens: float) -> float:
    return tokens / TOKENS_PER_PARAM


def train_flops(params: float, tokens: float) -> float:
    return 6 * params * tokens


def gpu_hours(flops: float, flops_per_gpu: float = 400e12) -> float:
    """GPU-hours at a sustained FLOP/s per GPU (400 TFLOP/s: a well-used H100 in bf16)."""
    return flops / flops_per_gpu / 3600


def training_memory_gb(params: float, bytes_per_param: float = 16) -> float:
    return params * bytes_per_param / GB


def inference_memory_gb(params: float, bytes_per_param: float = 2) -> float:
    """Weights only, bf16."""
    return params * bytes_per_param / GB


def zero_memory_gb(params: float, gpus: int, optimizer_bytes: float = 12) -> list[float]:
    """Per-GPU training state under ZeRO stages 0..3 (2-byte weights and gradients)."""
    p, k, g = params, optimizer_bytes, gpus
    return [
        (2 + 2 + k) * p / GB,
        (2 * p + 2 * p + k * p / g) / GB,
        (2 * p + (2 + k) * p / g) / GB,
        (2 + 2 + k) * p / g / GB,
    ]


def budget_report(tokens: int, flops_per_gpu: float, model_params: float | None, gpus: int) -> dict:
    """The compute side of a corpus of `tokens` tokens."""
    n_opt = chinchilla_params(tokens)
    c_opt = train_flops(n_opt, tokens)
    out = {
        "tokens": tokens,
        "compute_optimal_params": n_opt,
        "compute_optimal_flops": c_opt,
        "compute_optimal_gpu_hours": gpu_hours(c_opt, flops_per_gpu),
        "flops_per_gpu": flops_per_gpu,
    }
    if model_params:
        c = train_flops(model_params, tokens)
        out["model"] = {
            "params": model_params,
            "tokens_per_param": tokens / model_params,
            "times_compute_optimal_tokens": tokens / chinchilla_tokens(model_params),
            "flops": c,
            "gpu_hours": gpu_hours(c, flops_per_gpu),
            "training_memory_gb": training_memory_gb(model_params),
            "inference_memory_gb_bf16": inference_memory_gb(model_params),
            "zero_per_gpu_gb": dict(
                zip(
                    ["stage0", "stage1", "stage2", "stage3"],
                    zero_memory_gb(model_params, gpus),
                    strict=True,
                )  # fmt: skip
            ),
            "gpus": gpus,
        }
    return out
