"""Shared test setup: a headless matplotlib backend and the one-thread fixture."""
import matplotlib
import pytest
import torch

matplotlib.use("Agg")  # this test process only; notebook kernels keep their inline backend


@pytest.fixture
def one_thread():
    """Tiny models train faster on one thread, and do not stall on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
