"""``@xk.autotune``: pick the fastest of several configurations per problem key, and remember it.

Example::

    @xk.autotune(configs=[xk.Config({"BM": 128, "BN": 128, "BK": 16}, num_subgroups=8),
                          xk.Config({"BM": 64, "BN": 128, "BK": 32}, num_subgroups=4)],
                 key=["M", "N", "K"])
    @xk.jit
    def gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr): ...

    gemm[lambda meta: (xk.cdiv(M, meta["BM"]), xk.cdiv(N, meta["BN"]))](a, b, c, M, N, K)

The first launch for a key benchmarks every config (progress on stderr); configs that do not
compile or do not fit the device are skipped with the reason. The winner is kept in memory and
on disk (``<cache dir>/autotune/``), so a later process reuses it without tuning.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import knobs
from ..errors import CompilationError, LaunchError, XekernError
from .bench import do_bench
from .jit import JITFunction


class Config:
    """Constexpr values (``kwargs``) and launch options for one autotuning candidate."""

    def __init__(self, kwargs: Dict[str, Any], num_subgroups: Optional[int] = None, **options):
        self.kwargs = dict(kwargs)
        self.num_subgroups = num_subgroups
        self.options = options

    def launch_kwargs(self) -> Dict[str, Any]:
        kw = dict(self.kwargs)
        if self.num_subgroups is not None:
            kw["num_subgroups"] = self.num_subgroups
        kw.update(self.options)
        return kw

    def as_dict(self) -> dict:
        return {"kwargs": _plain(self.kwargs), "num_subgroups": self.num_subgroups, "options": _plain(self.options)}

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.kwargs.items()]
        if self.num_subgroups is not None:
            parts.append(f"num_subgroups={self.num_subgroups}")
        parts += [f"{k}={v}" for k, v in self.options.items()]
        return "Config(" + ", ".join(parts) + ")"


def _plain(d: dict) -> dict:
    return {k: (repr(v) if not isinstance(v, (int, float, bool, str, type(None))) else v) for k, v in d.items()}


class Autotuner:
    def __init__(self, fn: JITFunction, configs: Sequence[Config], key: Sequence[str], warmup: int = 2,
                 rep: int = 5, reset_to_zero: Sequence[str] = (), prune_configs_by=None, verbose: bool = True):
        if not isinstance(fn, JITFunction):
            raise TypeError("@xk.autotune goes above @xk.jit")
        if not configs:
            raise ValueError("autotune needs at least one Config")
        for name in key:
            if name not in fn.by_name:
                raise ValueError(f"autotune key '{name}' is not a parameter of {fn.__name__}")
        self.fn = fn
        self.configs = list(configs)
        self.key = list(key)
        self.warmup, self.rep = warmup, rep
        self.reset_to_zero = list(reset_to_zero)
        self.prune = prune_configs_by
        self.verbose = verbose
        self.best: Dict[str, Config] = {}
        self.timings: Dict[str, Dict[str, Any]] = {}
        self.__name__ = fn.__name__
        self.__xekern_jit__ = False

    def __getitem__(self, grid):
        return _TunedLauncher(self, grid)

    # ---- keys and storage ---------------------------------------------------------------------------
    def key_of(self, values: Dict[str, Any], overrides: Dict[str, Any]) -> str:
        parts = []
        for name in self.key:
            v = values[name]
            parts.append(v if isinstance(v, (int, float, bool, str)) else str(getattr(v, "dtype", type(v).__name__)))
        for p in self.fn.params:  # array dtypes matter too
            v = values.get(p.name)
            if hasattr(v, "dtype") and not isinstance(v, (int, float)):
                parts.append(f"{p.name}:{v.dtype}")
        target = overrides.get("target") or ""
        return json.dumps([parts, str(target)])

    def _path(self) -> str:
        h = hashlib.sha256(repr([self.fn.dependencies_hash(), [c.as_dict() for c in self.configs]]).encode())
        return os.path.join(knobs.cache_dir(), "autotune", f"{self.fn.__name__}-{h.hexdigest()[:16]}.json")

    def _load(self) -> Dict[str, int]:
        try:
            with open(self._path()) as f:
                data = json.load(f)
            return {k: int(v) for k, v in data.items()}
        except (OSError, ValueError):
            return {}

    def _save(self, key: str, index: int) -> None:
        path = self._path()
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = self._load()
            data[key] = index
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            os.replace(tmp, path)
        except OSError:
            pass  # tuning results are a convenience; the kernel still runs

    # ---- tuning ------------------------------------------------------------------------------------------
    def log(self, msg: str) -> None:
        if self.verbose:
            sys.stderr.write(f"[xekern autotune {self.fn.__name__}] {msg}\n")
            sys.stderr.flush()

    def choose(self, grid, args, kwargs) -> Config:
        overrides = {k: kwargs[k] for k in ("target", "device", "queue") if k in kwargs}
        values = {p.name: v for p, v in zip(self.fn.params, args)}
        values.update({k: v for k, v in kwargs.items() if k in self.fn.by_name})
        missing = [k for k in self.key if k not in values]
        if missing:
            raise LaunchError(f"autotune key argument(s) {missing} of {self.fn.__name__} were not given")
        key = self.key_of(values, overrides)
        cfg = self.best.get(key)
        if cfg is not None:
            return cfg
        stored = self._load().get(key)
        if stored is not None and 0 <= stored < len(self.configs):
            cfg = self.best[key] = self.configs[stored]
            return cfg
        cfg = self.best[key] = self.tune(key, grid, args, kwargs, values)
        self._save(key, self.configs.index(cfg))
        return cfg

    def tune(self, key, grid, args, kwargs, values) -> Config:
        configs = self.prune(self.configs, values) if self.prune else self.configs
        results = {}
        self.log(f"tuning {len(configs)} configs for {key}")
        for i, cfg in enumerate(configs, 1):
            kw = dict(kwargs)
            kw.update(cfg.launch_kwargs())
            try:
                def run():
                    for name in self.reset_to_zero:
                        _zero(values[name])
                    return self.fn.run(grid, args, dict(kw))
                ms = do_bench(run, warmup=self.warmup, rep=self.rep)
                results[i - 1] = ms
                self.log(f"  [{i}/{len(configs)}] {cfg}: {ms:.3f} ms")
            except (CompilationError, LaunchError, XekernError) as e:
                reason = str(e).strip().splitlines()[-1]
                self.log(f"  [{i}/{len(configs)}] {cfg}: skipped ({reason})")
        if not results:
            raise LaunchError(f"autotune: none of the {len(configs)} configs of {self.fn.__name__} can run for {key}")
        best = min(results, key=results.get)
        self.timings[key] = {repr(configs[i]): ms for i, ms in results.items()}
        self.log(f"best: {configs[best]} ({results[best]:.3f} ms)")
        return configs[best]


def _zero(a) -> None:
    if isinstance(a, np.ndarray):
        a[...] = 0
    elif hasattr(a, "fill_bytes"):
        a.fill_bytes(0)


class _TunedLauncher:
    def __init__(self, tuner: Autotuner, grid):
        self.tuner = tuner
        self.grid = grid

    def __call__(self, *args, **kwargs):
        cfg = self.tuner.choose(self.grid, args, kwargs)
        kw = dict(kwargs)
        kw.update(cfg.launch_kwargs())
        return self.tuner.fn.run(self.grid, args, kw)


def autotune(configs: Sequence[Config], key: Sequence[str], warmup: int = 2, rep: int = 5,
             reset_to_zero: Sequence[str] = (), prune_configs_by=None, verbose: bool = True):
    """Decorator: benchmark ``configs`` per value of the ``key`` arguments and launch the fastest."""
    def deco(fn):
        return Autotuner(fn, configs, key, warmup, rep, reset_to_zero, prune_configs_by, verbose)
    return deco
