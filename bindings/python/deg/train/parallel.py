"""Data-parallel deg.train over MPI: the communicator (one process or mpi4py), rank shards, the ordered gradient sum.

    mpirun -np N python -m deg.train --data records.jsonl --model M --out OUT ...

`world()` reads the launcher's environment (Open MPI's OMPI_COMM_WORLD_SIZE,
MPICH/Hydra's PMI_SIZE): with more than one rank it imports mpi4py and returns
an `Mpi` communicator, otherwise a `Local` one (one process, no MPI import), so
deg.train outside mpirun (or without mpi4py installed) runs as it always did.

The global step equals one process stepping on the union batch, bitwise.
Floating-point addition is not associative, so an MPI_Allreduce(SUM) of
per-rank gradients would depend on the rank count and the reduction tree.
Instead every optimizer step is defined as the sum of per-record partial
gradients in batch order, accumulated left to right in the gradient's dtype
from zeros: acc = ((0 + g_0) + g_1) + ... A batch is split into contiguous
blocks, rank r holding block r (`block`), so the sequence of additions is the
same whatever the rank count: rank 0 sums its partials into zeros, sends the
running sum to rank 1, which adds its partials in order and passes it on; the
last rank broadcasts the result (`ordered_sum`). The single-process path
(`Local.ordered_sum`) performs the same additions in the same order. Cost per
step: size - 1 point-to-point messages plus one broadcast of the flat
gradient; ranks > 0 keep their block's partials until their turn (rank 0 and
one process sum them as they come).

`ordered_sum` takes any flat float array (heads gradient, a LoRA adapter
gradient, or both concatenated), so a new trainable part passes through the
same call.
"""
import os
import sys
import traceback

import numpy as np

# Launcher variables holding the world size: Open MPI's mpirun, then the PMI
# ones of MPICH/Hydra (and Intel MPI).
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


class ParallelError(RuntimeError):
    """The MPI set-up cannot work (no mpi4py, or mpi4py built for another MPI)."""


def launched_size(environ=None):
    """World size announced by the launcher's environment (1 outside mpirun)."""
    env = os.environ if environ is None else environ
    for k in SIZE_VARS:
        v = env.get(k)
        if v is not None:
            try:
                return max(int(v), 1)
            except ValueError:
                raise ParallelError(f"{k}={v!r} is not a rank count") from None
    return 1


def _block(n, rank, size):
    """[lo, hi) of rank's contiguous block of n items: the first n % size ranks
    get one extra, so rank order is item order."""
    q, r = divmod(n, size)
    lo = rank * q + min(rank, r)
    return lo, lo + q + (1 if rank < r else 0)


class Local:
    """One process: every collective is the identity; the same summation order
    as `Mpi`."""
    rank, size = 0, 1

    def block(self, n):
        return _block(n, 0, 1)

    def share(self, seq):
        """This rank's strided share of seq (all of it)."""
        return list(seq)

    def ordered_sum(self, partials, n, dtype=np.float32):
        """Sum of the flat arrays `partials` (an iterable, each [n], dtype),
        left to right from zeros; see the module docstring. A generator keeps
        one partial in memory at a time."""
        acc = np.zeros(n, dtype=dtype)
        for p in partials:
            _add(acc, p, n, dtype)
        return acc

    def allgather(self, obj):
        return [obj]

    def bcast(self, obj, root=0):
        return obj

    def barrier(self):
        pass

    def sum(self, x):
        return x

    def max(self, x):
        return x

    def check_shared_dir(self, path):
        pass

    def run(self, fn):
        return fn()


def _add(acc, p, n, dtype):
    p = np.asarray(p)
    if p.shape != (n,) or p.dtype != dtype:
        raise ValueError(f"ordered_sum: a partial of shape {p.shape} {p.dtype}, "
                         f"expected ({n},) {np.dtype(dtype)}")
    acc += p


class Mpi:
    """MPI.COMM_WORLD of mpi4py (size > 1)."""

    def __init__(self, comm):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def block(self, n):
        return _block(n, self.rank, self.size)

    def share(self, seq):
        """Records rank, rank + size, ...: an even share of per-record work
        whose results go to a shared place (the feature cache)."""
        return list(seq)[self.rank::self.size]

    def ordered_sum(self, partials, n, dtype=np.float32):
        """The Local sum of every rank's partials concatenated in rank order
        (rank r holds block r), on every rank; a pipeline rank 0 -> size - 1,
        then a broadcast from the last rank."""
        acc = np.zeros(n, dtype=dtype)
        if self.rank > 0:
            partials = list(partials)  # computed while the earlier ranks sum theirs
            self.comm.Recv(acc, source=self.rank - 1, tag=71)
        for p in partials:
            _add(acc, p, n, dtype)
        if self.rank < self.size - 1:
            self.comm.Send(acc, dest=self.rank + 1, tag=71)
        self.comm.Bcast(acc, root=self.size - 1)
        return acc

    def allgather(self, obj):
        return self.comm.allgather(obj)

    def bcast(self, obj, root=0):
        return self.comm.bcast(obj, root=root)

    def barrier(self):
        self.comm.Barrier()

    def sum(self, x):
        return sum(self.comm.allgather(x))

    def max(self, x):
        return max(self.comm.allgather(x))

    def check_shared_dir(self, path):
        """Raise ParallelError on every rank unless all ranks see the same
        directory (rank 0 writes a marker every rank must read back)."""
        marker = self.bcast(os.path.join(path, f".deg-mpi-{os.getpid()}")
                            if self.rank == 0 else None)
        if self.rank == 0:
            with open(marker, "w") as fh:
                fh.write("deg.train rank 0\n")
        self.barrier()
        seen = self.allgather(os.path.exists(marker))
        self.barrier()
        if self.rank == 0:
            os.unlink(marker)
        missing = [r for r, ok in enumerate(seen) if not ok]
        if missing:
            raise ParallelError(f"{path} is not shared: ranks {missing} do not see rank 0's "
                                "files there (every rank needs the same feature cache and "
                                "output directory: one machine or a shared file system)")

    def run(self, fn):
        """fn() on this rank; an exception or a non-zero exit code on any rank
        aborts the whole job (the other ranks would wait in a collective)."""
        try:
            rc = fn()
        except BaseException:
            sys.stderr.write(f"deg.train rank {self.rank}/{self.size}: failed\n")
            traceback.print_exc()
            sys.stderr.flush()
            self.comm.Abort(1)
            raise
        if rc:
            sys.stderr.flush()
            self.comm.Abort(int(rc))
        return rc


def world():
    """Local() outside mpirun or with one rank; else Mpi(MPI.COMM_WORLD).
    Raises ParallelError when launched with several ranks and mpi4py is
    missing, or when mpi4py sees another world size than the launcher
    announced (it is built against another MPI than the mpirun used)."""
    n = launched_size()
    if n <= 1:
        return Local()
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ParallelError(f"launched by mpirun with {n} ranks, but mpi4py cannot be imported "
                            f"({e}); install it (pip install mpi4py, built against this MPI) "
                            "or run without mpirun") from None
    comm = MPI.COMM_WORLD
    if comm.Get_size() != n:
        raise ParallelError(f"the launcher started {n} ranks but mpi4py sees "
                            f"{comm.Get_size()}: mpi4py is built against another MPI than "
                            f"this mpirun ({MPI.Get_library_version().splitlines()[0]})")
    return Mpi(comm)
