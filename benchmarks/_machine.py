"""What the benchmarks share: the --device and --threads options, and one line naming
the machine a table was measured on (printed above every table)."""
import torch

import d2lmini as d2l
from d2lmini.checkpoints import machine


def add_device_args(ap, threads: int | None = None) -> None:
    """--device (default: d2l.device()) and --threads (default: ``threads``, or
    torch's)."""
    default = threads or "torch's"
    ap.add_argument("--device", default=None, help="default: d2lmini.device()")
    ap.add_argument("--threads", type=int, default=threads,
                    help=f"torch CPU threads (default: {default})")


def setup(args) -> tuple[torch.device, str]:
    """Apply --threads; -> the device and the line that names machine and versions."""
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device) if args.device else d2l.device()
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else machine()
    cuda = f", CUDA {torch.version.cuda}" if dev.type == "cuda" else ""
    return dev, (f"device: {dev} ({where}), torch {torch.__version__}{cuda}, "
                 f"{torch.get_num_threads()} CPU thread(s)")
