"""d2lmini: the small shared package of the d2lmini book, from linear algebra to the
Transformer.  One module per concept; every from-scratch piece is tested against
torch."""
from .attention import (AdditiveAttention, MultiHeadAttention, masked_softmax,
                        mha_state_dict_from_torch, scaled_dot_product_attention)
from .attention import set_fused_attention
from .data import data_iter, synthetic_data
from .bert import BERT, bert_from_hf, mask_tokens
from .exercises import check, exercise
from .exercises import show_solution as solution
from .claims import ClaimError, claim
from .stats import Comparison, compare, forest_plot, interval
from .masks import causal_mask, length_mask, local_causal_mask, padding_mask
from .maps import AttentionMaps, collect_attention
from .gpt import (GPT, KVCache, generate, gelu_tanh, kv_cache_benchmark, kv_cache_bytes,
                  load_corpus)
from .bpe import BPE
from .gpt2 import (GPT_CONFIGS, gpt2_from_hf, gpt_kv_cache_bytes_per_token,
                   gpt_param_count, gpt_train_flops, huggingface_reachable)
from .monitor import TrainingMonitor
from .norms import BatchNorm, LayerNorm, RMSNorm
from .plot import plot, show_heatmaps
from .regression import accuracy, cross_entropy, linreg, sgd, softmax, squared_loss
from .rnn import AttentionGRUDecoder, ConvStack, GRUEncoder, GRUSeq2Seq
from .schedules import noam_schedule, warmup_cosine_schedule
from .text import (DateTranslation, Vocab, bucket_batches, lm_windows, pad_batch,
                   pairs_to_tensors, toy_translation)
from .text import random_batches, read_pairs, split_heldout  # your own data
from .io import load, load_results, save
from .checkpoints import load_pretrained
from .lora import LoRALinear, add_lora, merge_lora  # chapter 16
from .align import dpo_loss, sequence_logprob  # chapter 16
from .train import History, train
from .transformer import (DecoderBlock, EncoderBlock, PositionalEncoding,
                          PositionWiseFFN, Transformer, greedy_decode,
                          label_smoothing_cross_entropy, sequence_loss,
                          state_dict_from_torch)
from .utils import device, set_seed, show_source
from .memory import peak_memory  # chapter 2: reverse mode's memory against depth
from .graphdraw import graph_diagram, network_diagram  # chapters 2 and 3
from .diagrams import diagram
from .views import head_view, model_view
from .live import live
from .widgets import (AttentionExplorer, PEExplorer, attention_explorer,
                      attention_figure, pe_explorer, pe_figure)

from . import ablation  # chapter 9: train one variant on the dates, measure it
from . import ddp  # more than one device: torchrun, average_gradients

__version__ = "0.1.0"
