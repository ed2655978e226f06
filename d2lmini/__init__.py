"""d2lmini: the small shared package of the d2lmini book, from linear algebra to the
Transformer.  One module per concept; every from-scratch piece is tested against torch."""
from .attention import (AdditiveAttention, MultiHeadAttention, masked_softmax,
                        mha_state_dict_from_torch, scaled_dot_product_attention)
from .data import data_iter, synthetic_data
from .exercises import check
from .masks import causal_mask, length_mask, padding_mask
from .monitor import TrainingMonitor
from .norms import BatchNorm, LayerNorm
from .plot import plot, show_heatmaps
from .regression import accuracy, cross_entropy, linreg, sgd, softmax, squared_loss
from .schedules import noam_schedule, warmup_cosine_schedule
from .text import DateTranslation, Vocab, bucket_batches, pad_batch, toy_translation
from .train import History, train
from .transformer import (DecoderBlock, EncoderBlock, PositionalEncoding, PositionWiseFFN,
                          Transformer, greedy_decode, label_smoothing_cross_entropy,
                          state_dict_from_torch)
from .utils import device, set_seed, show_source
from .widgets import (AttentionExplorer, AttentionMaps, PEExplorer, attention_explorer,
                      attention_figure, collect_attention, pe_explorer, pe_figure)

__version__ = "0.1.0"
