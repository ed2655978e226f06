"""Chapter 9: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import torch
import torch.nn.functional as F

WRONG = {
    "ch9_ffn_params": [
        lambda d, d_ff: 2 * d * d_ff,                            # weights only
        lambda d, d_ff: 2 * d * d_ff + d_ff + d,                 # no LayerNorm
        lambda d, d_ff: 16832,                                   # one case's number
        lambda d, d_ff: 2 * d * d_ff + d_ff + d + d,             # half the LayerNorm
    ],
    "ch9_smoothed_ce": [
        lambda logits, target, eps: F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), target.reshape(-1)),        # no smoothing
        lambda logits, target, eps: _smoothed(logits, target, eps, over_others=True),
        lambda logits, target, eps: _smoothed(logits, target, eps).sum() / 2,  # a constant
        lambda logits, target, eps: -(1 - eps) * logits.log_softmax(-1).gather(
            -1, target[..., None]).mean(),                                      # no eps/V term
    ],
    "ch9_conv_ffn": [
        lambda x, ffn: F.conv1d(x, ffn.linear1.weight[..., None], ffn.linear1.bias),
        lambda x, ffn: F.conv1d(F.conv1d(x, ffn.linear1.weight[..., None],
                                         ffn.linear1.bias),
                                ffn.linear2.weight[..., None], ffn.linear2.bias),  # no ReLU
        lambda x, ffn: ffn(x),                                       # wrong axis order
        lambda x, ffn: ffn(x.transpose(1, 2)),                       # not transposed back
    ],
}


def _smoothed(logits, target, eps, over_others=False):
    logp = logits.log_softmax(-1)
    V = logits.shape[-1]
    nll = -logp.gather(-1, target[..., None]).squeeze(-1)
    if over_others:                         # eps spread over the V - 1 wrong classes only
        rest = -logp.sum(-1) - nll              # -sum of log p over the wrong classes
        return ((1 - eps) * nll + eps * rest / (V - 1)).mean()
    return ((1 - eps) * nll - eps * logp.mean(-1)).mean()


def _conv(x, ffn):
    w1, w2 = ffn.linear1.weight[..., None], ffn.linear2.weight[..., None]
    return F.conv1d(torch.relu(F.conv1d(x, w1, ffn.linear1.bias)), w2, ffn.linear2.bias)


RIGHT = {
    "ch9_ffn_params": [lambda d, d_ff: d * d_ff + d_ff + d_ff * d + d + 2 * d],
    "ch9_smoothed_ce": [lambda logits, target, eps: _smoothed(logits, target, eps)],
    "ch9_conv_ffn": [_conv],
}
