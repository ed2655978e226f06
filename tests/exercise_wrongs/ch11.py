"""Chapter 11: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

WRONG = {
    "ch11_crossover": [
        lambda d: 64,                     # one case's number
        lambda d: 2 * d,
        lambda d: d // 2,
        lambda d: math.isqrt(d),
    ],
    "ch11_conv_depth": [
        lambda T, k, dil: math.ceil(math.log(T, k)) if dil else math.ceil(T / (k - 1)),
        lambda T, k, dil: math.ceil((T - 1) / k) if not dil else math.ceil(math.log(T, k)),
        lambda T, k, dil: T - 1,
        lambda T, k, dil: 25,
    ],
    "ch11_source_mask": [
        lambda src, pad: (src != pad),                        # no query axis
        lambda src, pad: (src != 0)[:, None, :],              # pad id hard-coded
        lambda src, pad: (src == pad)[:, None, :],            # True on the pads
        lambda src, pad: (src != pad)[:, :, None],            # wrong axis
    ],
    "ch11_gru_params": [
        lambda i, h: 3 * (i * h + h * h),                     # no biases
        lambda i, h: 3 * (i * h + h * h + h),                 # one bias per gate
        lambda i, h: 4 * (i * h + h * h + 2 * h),             # an LSTM
        lambda i, h: 31104,
    ],
}


def _layers(T, k, dil):
    if not dil:
        return -(-(T - 1) // (k - 1))
    L = 0
    while k ** L < T:
        L += 1
    return L


RIGHT = {
    "ch11_crossover": [lambda d: d],
    "ch11_conv_depth": [_layers],
    "ch11_source_mask": [lambda src, pad: (src != pad).unsqueeze(1)],
    "ch11_gru_params": [lambda i, h: 3 * h * (i + h + 2)],
}
