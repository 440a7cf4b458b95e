"""deg: schema fill and cartridges for small transformer LMs on the CPU.

A thin Python layer over libdeg (include/deg.h) through cffi: the C library
does the work, this package converts types, raises typed exceptions carrying
the C messages, and frees handles deterministically (close() / with) or on GC.
"""
from .errors import (  # noqa: F401
    DegError, ArgumentError, DegIOError, FormatError, UnsupportedError, DegMemoryError,
    Utf8Error, RangeError, SchemaError, RequestError, FillError, StateError,
    MismatchError, NumericError, InternalError, ModelNotFoundError, CancelledError,
    LimitError,
)
from .limits import CancelToken  # noqa: F401
from .runtime import version, runtime_info, blas_arch, set_num_threads, HEADER_VERSION  # noqa: F401
from .model import (  # noqa: F401
    load_model, Model, ModelInfo, Trunk, Fork, Generation, GenStats, feed_forks, generate_forks,
)
from .fetch import default_model_path, fetch_model, cache_dir  # noqa: F401
from .parsers import (  # noqa: F401
    parse_number, parse_number_json, parse_date, parse_datetime, format_check, candidates,
    trim_span, validate, validate_json, assemble_response, Acceptor,
)
from .schema import (  # noqa: F401
    compile_schema, FillPlan, FieldPlan, ArrayPlan, render_context, parse_options,
    parse_request, Request,
)
from .cartridge import Cartridge, DistillTarget, targets_from_logits  # noqa: F401
from .fleet import Fleet  # noqa: F401

from .fill import (  # noqa: F401,E402
    fill, fill_many, load, create_random_checkpoint, Checkpoint, default_checkpoint_path,
    ckpt_backbone_path,
)

__version__ = version()
from . import selfstudy  # noqa: F401,E402  (self-study: deg.selfstudy.train, Cartridge.ask)
from . import api  # noqa: F401,E402  (decision APIs of §9.1: deg.api.decisions / systemone)
from .client import Client  # noqa: F401,E402  (SDK of a deg server)
