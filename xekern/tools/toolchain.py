"""Intel's offline GPU compiler as part of xekern: fetched from Debian into xekern's cache folder.

Two compilers, each in a private root of its own (nothing is installed system-wide):

- ``current``: the compiler users run today, compute-runtime 26.x / IGC 2.x from Debian's
  unstable suite (``sid``; ``testing`` when sid has none). It knows pvc, dg2, bmg, lnl, ptl and
  takes the ``SPV_INTEL_2d_block_io`` / subgroup-matrix-multiply ops. The ISA comes from IGC's
  own dump (``IGC_ShaderDumpEnable``): its ``ocloc disasm`` prints nothing for these kernels.
- ``12504``: Debian 12's compute-runtime 22.43 / IGC 1.0.12504 (2022), a second opinion.

``python -m xekern toolchain install`` runs, with the machine's own Debian mirror and keyring
(read from its apt sources), a private ``apt-get update`` and ``apt-get download`` of the
compiler's packages and their dependency closure (glibc and libstdc++ included: sid's binaries
need newer ones than Debian 12 has), unpacks them with ``dpkg -x`` and runs every tool through
the root's own dynamic loader (HARDWARE.md, "The current Intel GPU compiler, offline"). Each
root records what it fetched (``manifest.json``: suite, mirror, packages, versions, SHA-256).
Installs are atomic (built aside, renamed into place) and serialized by a lock, so a second
process never sees half a root.

    >>> from xekern.tools import toolchain
    >>> toolchain.install()                      # doctest: +SKIP
    >>> toolchain.get("current").ocloc_version   # doctest: +SKIP
    '26.27.39122'
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import glob
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import knobs
from ..errors import XekernError

INSTALL_COMMAND = "python -m xekern toolchain install"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
TIMEOUT = 900.0  # seconds for one apt-get run (a slow mirror: ~150 MB)


class ToolchainError(XekernError):
    """The offline GPU toolchain is missing, cannot be fetched, or a tool in it failed to start."""


@dataclass(frozen=True)
class Compiler:
    """One Intel offline compiler xekern can fetch: which Debian suites carry it and which packages
    make it (their dependency closure is fetched too). ``{igc}`` in a package name is the IGC
    library's own package name (``libigc2`` in sid, ``libigc1`` in bookworm)."""

    name: str
    suites: Tuple[str, ...]        # tried in order; the first that has every package wins
    packages: Tuple[str, ...]
    about: str
    isa_from_dump: bool            # the ISA comes from IGC's dump (else ``ocloc disasm`` + ``iga64``)


COMPILERS: Dict[str, Compiler] = {c.name: c for c in (
    Compiler("current", ("unstable", "testing"), ("intel-ocloc", "intel-opencl-icd", "{igc}-tools", "spirv-tools"),
             "compute-runtime 26.x / IGC 2.x, what users' drivers run (Debian unstable)", True),
    Compiler("12504", ("bookworm",), ("intel-opencl-icd", "libigc-tools", "spirv-tools"),
             "compute-runtime 22.43 / IGC 1.0.12504 (Debian 12, 2022), for comparison", False),
)}
ORDER = ("current", "12504")  # the default compiler is the first one installed


def root_dir() -> str:
    """Where the toolchain lives: ``XEKERN_TOOLCHAIN_DIR``, else ``toolchain/`` in the cache folder."""
    return knobs.toolchain_dir()


# ---- an installed compiler ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Installed:
    """A compiler unpacked in its private root, and how to run its tools."""

    name: str
    root: str
    manifest: dict

    @property
    def about(self) -> str:
        return COMPILERS[self.name].about if self.name in COMPILERS else self.name

    @property
    def isa_from_dump(self) -> bool:
        return COMPILERS[self.name].isa_from_dump

    @property
    def ocloc_version(self) -> str:
        """The compute-runtime version (``26.27.39122``, ``22.43.24595``)."""
        return self.manifest.get("ocloc_version", "unknown")

    @property
    def igc_version(self) -> str:
        """The IGC package version (``2.40.14-1``, ``1.0.12504.6-1+deb12u1``)."""
        return self.manifest.get("igc_version", "unknown")

    @property
    def label(self) -> str:
        """``ocloc 26.27.39122 / IGC 2.40.14-1`` for reports."""
        return f"ocloc {self.ocloc_version} / IGC {self.igc_version}"

    def tool(self, name: str) -> str:
        """The path of tool ``name`` (``ocloc``, ``iga64``, ``spirv-val``, ``spirv-dis``) in the root."""
        bin_dir = os.path.join(self.root, "usr", "bin")
        exact = os.path.join(bin_dir, name)
        hits = [exact] if os.path.isfile(exact) else sorted(glob.glob(os.path.join(bin_dir, name + "-*")))
        hits = [h for h in hits if os.path.isfile(h) and os.access(h, os.X_OK)]
        if not hits:
            raise ToolchainError(f"the {self.name} toolchain in {self.root} has no '{name}'; reinstall it with: "
                                 f"{INSTALL_COMMAND} --force")
        return hits[0]

    def command(self, name: str, args: Sequence[str]) -> List[str]:
        """The command line running tool ``name`` through the root's own loader and libraries (sid's
        binaries need a newer glibc than the host may have; the host's libraries are never mixed in)."""
        loader, libs = _loader(self.root)
        return [loader, "--library-path", libs, self.tool(name), *args]


def _loader(root: str) -> Tuple[str, str]:
    dirs = [os.path.join(root, d) for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")]
    dirs = [d for d in dirs if os.path.isdir(d) and not os.path.islink(d)]
    for d in dirs:
        ld = os.path.join(d, "ld-linux-x86-64.so.2")
        if os.path.isfile(ld) and not os.path.islink(ld) or os.path.islink(ld) and \
                not os.path.isabs(os.readlink(ld)):
            return ld, ":".join(dirs)
    raise ToolchainError(f"the toolchain root {root} has no dynamic loader of its own; reinstall it with: "
                         f"{INSTALL_COMMAND} --force")


def get(name: Optional[str] = None) -> Installed:
    """The installed compiler ``name`` (``current``, ``12504``), or the default: ``current`` if it
    is installed, else the first one that is. A missing toolchain raises ``ToolchainError`` naming
    the command that installs it."""
    names = [name] if name is not None else list(ORDER)
    if name is not None and name not in COMPILERS:
        raise ToolchainError(f"unknown compiler {name!r}; known: {', '.join(COMPILERS)}")
    for n in names:
        got = installed(n)
        if got is not None:
            return got
    what = f"the {name} offline GPU compiler is not" if name else "no offline GPU compiler is"
    raise ToolchainError(f"{what} installed in {root_dir()}; install it with: {INSTALL_COMMAND}"
                         + (f" {name}" if name else ""))


def installed(name: str) -> Optional[Installed]:
    """The compiler ``name`` if its root is complete (its manifest is written last), else None."""
    root = os.path.join(root_dir(), name)
    try:
        with open(os.path.join(root, "manifest.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    return Installed(name, root, manifest)


def all_installed() -> List[Installed]:
    return [c for c in (installed(n) for n in ORDER) if c is not None]


def spirv_tool(name: str) -> Optional[List[str]]:
    """The command that runs SPIRV-Tools' ``name`` (``spirv-val``, ``spirv-dis``): the newest
    installed compiler's (sid's SPIRV-Tools know the Intel 2D block IO and matrix ops), else one on
    PATH, else None."""
    for inst in all_installed():
        try:
            return inst.command(name, [])
        except ToolchainError:
            continue
    path = shutil.which(name)
    return [path] if path else None


# ---- fetching -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mirror:
    """The Debian archive to fetch from and the keyring that signs it."""

    uri: str
    keyring: str
    source: str   # where it was found: a sources file, XEKERN_DEBIAN_MIRROR, or the default


_DEBIAN_SUITE = re.compile(r"^(buster|bullseye|bookworm|trixie|forky|duke|sid|stable|testing|unstable|oldstable)"
                           r"(-updates|-backports|-proposed-updates)?$")


def _sources_entries(text: str, deb822: bool) -> List[Tuple[List[str], List[str], Optional[str]]]:
    """(URIs, suites, Signed-By) of each ``deb`` entry of an apt sources file."""
    out = []
    if deb822:
        for para in re.split(r"\n\s*\n", text):
            fields: Dict[str, str] = {}
            key = None
            for line in para.splitlines():
                if line.startswith("#") or not line.strip():
                    continue
                if line[0] in " \t" and key:
                    fields[key] += "\n" + line.strip()
                    continue
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
            if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes").lower() != "no":
                signed = fields.get("signed-by", "").strip()
                out.append((fields.get("uris", "").split(), fields.get("suites", "").split(),
                            signed if signed.startswith("/") else None))
        return out
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^deb\s+(?:\[(?P<opts>[^\]]*)\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)", line)
        if m:
            signed = re.search(r"signed-by=(\S+)", m.group("opts") or "")
            out.append(([m.group("uri")], [m.group("suite")], signed.group(1) if signed else None))
    return out


def find_mirror(etc: str = "/etc/apt") -> Mirror:
    """The machine's configured Debian mirror (its apt sources: one-line ``.list`` files and deb822
    ``.sources``), the one serving a Debian suite that is not the security archive. On a host with
    no Debian mirror configured (Ubuntu): ``XEKERN_DEBIAN_MIRROR``, else deb.debian.org."""
    env = os.environ.get("XEKERN_DEBIAN_MIRROR")
    if env:
        return Mirror(env.rstrip("/"), DEBIAN_KEYRING, "XEKERN_DEBIAN_MIRROR")
    files = [os.path.join(etc, "sources.list")] + sorted(glob.glob(os.path.join(etc, "sources.list.d", "*")))
    for path in files:
        if not (path.endswith(".list") or path.endswith(".sources")):
            continue
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for uris, suites, signed in _sources_entries(text, path.endswith(".sources")):
            if not any(_DEBIAN_SUITE.match(s) for s in suites):
                continue
            for uri in uris:
                if "security" in uri or not uri.startswith(("http://", "https://", "file:")):
                    continue
                keyring = signed if signed and os.path.exists(signed) else DEBIAN_KEYRING
                return Mirror(uri.rstrip("/"), keyring, path)
    return Mirror(DEFAULT_MIRROR, DEBIAN_KEYRING, "default (no Debian mirror in the apt sources)")


class _Apt:
    """apt-get and apt-cache on a private configuration: one suite of one mirror, lists and
    package cache in ``work``; the host's apt state is only read (dpkg status), never changed."""

    def __init__(self, work: str, mirror: Mirror, suite: str):
        self.work = work
        for d in ("lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/preferences.d", "debs"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        with open(os.path.join(work, "etc", "sources.list"), "w") as f:
            f.write(f"deb [signed-by={mirror.keyring}] {mirror.uri} {suite} main\n")
        self.options = [
            f"-oDir::Etc::SourceList={work}/etc/sources.list", f"-oDir::Etc::SourceParts={work}/etc/sources.list.d",
            f"-oDir::Etc::Preferences={work}/etc/preferences", f"-oDir::Etc::PreferencesParts={work}/etc/preferences.d",
            f"-oDir::State::Lists={work}/lists", f"-oDir::Cache={work}/cache", "-oDebug::NoLocking=1",
            "-oAPT::Architecture=amd64", "-oAPT::Architectures=amd64", "-oAPT::Default-Release=",
            "-oAcquire::Languages=none", "-oAcquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false"]
        if os.geteuid() == 0:  # apt drops to _apt, which cannot write into a private directory
            self.options.append("-oAPT::Sandbox::User=root")

    def run(self, tool: str, args: Sequence[str], cwd: Optional[str] = None) -> str:
        cmd = [tool, *self.options, *args]
        try:
            r = subprocess.run(cmd, cwd=cwd or self.work, capture_output=True, text=True, errors="replace",
                               timeout=TIMEOUT, env=dict(os.environ, LC_ALL="C", DEBIAN_FRONTEND="noninteractive"))
        except FileNotFoundError:
            raise ToolchainError(f"'{tool}' is not on this machine: the toolchain is fetched with Debian's apt "
                                 f"(Debian 12/13, Ubuntu)") from None
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"{tool} {' '.join(args)} did not finish in {TIMEOUT:.0f} s") from None
        if r.returncode != 0:
            raise ToolchainError(f"{tool} {' '.join(args)} failed (exit status {r.returncode}):\n"
                                 + (r.stderr.strip() or r.stdout.strip())[-2000:])
        return r.stdout

    def versions(self, names: Sequence[str]) -> Dict[str, str]:
        """name -> candidate version of the packages the suite has (the others are absent)."""
        out = self.run("apt-cache", ["policy", *names])
        found = {}
        for block in re.split(r"\n(?=\S)", out):
            m = re.match(r"^(\S+):\s*\n\s+Installed:.*\n\s+Candidate:\s*(\S+)", block)
            if m and m.group(2) != "(none)":
                found[m.group(1)] = m.group(2)
        return found

    def closure(self, names: Sequence[str]) -> List[str]:
        """``names`` and every package they depend on (pre-depends included; recommends not)."""
        out = self.run("apt-cache", ["depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                                     "--no-breaks", "--no-replaces", "--no-enhances", *names])
        return sorted({ln.strip() for ln in out.splitlines() if ln and not ln[0].isspace() and not ln.startswith("<")})


def _igc_library(apt: _Apt) -> str:
    """The IGC library's package name in the suite (``libigc2``): what intel-opencl-icd depends on."""
    out = apt.run("apt-cache", ["depends", "intel-opencl-icd"])
    m = re.search(r"Depends:\s*(libigc\d*)\b", out)
    if m is None:
        raise ToolchainError("intel-opencl-icd depends on no libigc package in this suite")
    return m.group(1)


def _resolve(apt: _Apt, compiler: Compiler) -> Tuple[List[str], str]:
    """The packages of ``compiler`` in the suite (``{igc}`` filled in; a ``libigcN-tools`` that does
    not exist falls back to ``libigc-tools``), and the IGC library package."""
    versions = apt.versions(["intel-opencl-icd"])
    if "intel-opencl-icd" not in versions:
        raise ToolchainError("the suite has no intel-opencl-icd")
    igc = _igc_library(apt)
    names = [p.replace("{igc}", igc) for p in compiler.packages]
    have = apt.versions(names + ["libigc-tools"])
    names = [n if n in have or not n.endswith("-tools") else "libigc-tools" for n in names]
    missing = [n for n in names if n not in have]
    if missing:
        raise ToolchainError(f"the suite lacks {', '.join(missing)}")
    return names, igc


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _deb_field(path: str, field: str) -> str:
    r = subprocess.run(["dpkg-deb", "-f", path, field], capture_output=True, text=True)
    return r.stdout.strip()


def _ocloc_version(inst: Installed) -> str:
    """``ocloc --version`` (IGC 2.x's ocloc), else ``ocloc query OCL_DRIVER_VERSION`` (22.43's)."""
    with tempfile.TemporaryDirectory(prefix="xekern-ocloc-") as d:
        r = subprocess.run(inst.command("ocloc", ["--version"]), cwd=d, capture_output=True, text=True,
                           errors="replace", timeout=60)
        m = re.search(r"(\d+)\.(\d+)\.0*(\d+)", r.stdout + r.stderr)
        if r.returncode == 0 and m:
            return ".".join(m.groups())
        r = subprocess.run(inst.command("ocloc", ["query", "OCL_DRIVER_VERSION"]), cwd=d, capture_output=True,
                           text=True, errors="replace", timeout=60)
        path = os.path.join(d, "OCL_DRIVER_VERSION")
        if r.returncode == 0 and os.path.exists(path):
            with open(path, errors="replace") as f:
                return f.read().strip("\x00 \n") or "unknown"
    raise ToolchainError(f"the {inst.name} ocloc in {inst.root} does not run:\n{(r.stderr or r.stdout).strip()}")


@contextlib.contextmanager
def _lock(top: str):
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _fetch(compiler: Compiler, mirror: Mirror, top: str, log: Callable[[str], None]) -> Installed:
    """Fetch ``compiler`` into ``top/<name>``: a new root built aside and renamed into place."""
    errors = []
    with tempfile.TemporaryDirectory(prefix=f".{compiler.name}-", dir=top) as work:
        for suite in compiler.suites:
            apt = _Apt(os.path.join(work, suite), mirror, suite)
            try:
                log(f"  {compiler.name}: reading {mirror.uri} {suite}")
                apt.run("apt-get", ["update"])
                names, igc = _resolve(apt, compiler)
            except ToolchainError as e:
                errors.append(f"{suite}: {str(e).splitlines()[0] if str(e) else e}")
                continue
            break
        else:
            raise ToolchainError(f"the {compiler.name} compiler ({compiler.about}) cannot be had from {mirror.uri}: "
                                 + "; ".join(errors))
        packages = apt.closure(names + [igc])
        log(f"  {compiler.name}: fetching {len(packages)} packages from {suite}: {' '.join(packages)}")
        debs = os.path.join(apt.work, "debs")
        apt.run("apt-get", ["download", *packages], cwd=debs)
        root = os.path.join(work, "root")
        fetched = []
        for path in sorted(glob.glob(os.path.join(debs, "*.deb"))):
            subprocess.run(["dpkg-deb", "-x", path, root], check=True, capture_output=True)
            fetched.append({"package": _deb_field(path, "Package"), "version": _deb_field(path, "Version"),
                            "file": os.path.basename(path), "bytes": os.path.getsize(path), "sha256": _sha256(path)})
        for junk in ("usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/lintian"):
            shutil.rmtree(os.path.join(root, junk), ignore_errors=True)
        by_name = {p["package"]: p["version"] for p in fetched}
        manifest = {"compiler": compiler.name, "about": compiler.about, "suite": suite, "mirror": mirror.uri,
                    "mirror_source": mirror.source, "fetched": datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y-%m-%dT%H:%M:%SZ"), "igc_package": igc, "igc_version": by_name.get(igc, "unknown"),
                    "packages": fetched}
        probe = Installed(compiler.name, root, manifest)
        manifest["ocloc_version"] = _ocloc_version(probe)
        with open(os.path.join(root, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        final = os.path.join(top, compiler.name)
        old = os.path.join(work, "old")
        if os.path.exists(final):
            os.rename(final, old)
        os.rename(root, final)
    return Installed(compiler.name, final, manifest)


def install(names: Sequence[str] = ORDER, force: bool = False, log: Callable[[str], None] = print) -> List[Installed]:
    """Fetch the compilers ``names`` (default: both) into ``root_dir()``; an installed one is kept
    unless ``force``. One that cannot be had is reported (``log``) and skipped; it is an error only
    when none of ``names`` ends up installed."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise ToolchainError(f"Intel's offline GPU compiler is built for x86-64 only; this machine is "
                             f"{platform.machine()}")
    bad = [n for n in names if n not in COMPILERS]
    if bad:
        raise ToolchainError(f"unknown compiler {', '.join(bad)}; known: {', '.join(COMPILERS)}")
    top = root_dir()
    mirror = find_mirror()
    if not os.path.exists(mirror.keyring):
        raise ToolchainError(f"the Debian archive keyring {mirror.keyring} is missing (needed to check what is "
                             f"fetched from {mirror.uri}); install it with: apt-get install debian-archive-keyring")
    got, failed = [], []
    with _lock(top):
        for n in names:
            have = installed(n)
            if have is not None and not force:
                log(f"{n}: already installed ({have.label}, from {have.manifest.get('suite')}) in {have.root}")
                got.append(have)
                continue
            try:
                inst = _fetch(COMPILERS[n], mirror, top, log)
            except ToolchainError as e:
                log(f"{n}: NOT installed: {e}")
                failed.append(n)
                continue
            log(f"{n}: installed {inst.label} from {inst.manifest['suite']} into {inst.root}")
            got.append(inst)
    if not got:
        raise ToolchainError(f"no offline GPU compiler could be installed ({', '.join(failed)}); see the messages above")
    if failed:
        log(f"the ISA checks run on {', '.join(g.name for g in got)}: {', '.join(failed)} could not be had")
    return got


def info() -> List[str]:
    """One paragraph per compiler: installed or not, its versions, suite and what it was fetched from."""
    lines = [f"toolchain folder: {root_dir()}"]
    for n in ORDER:
        c = installed(n)
        if c is None:
            lines.append(f"{n}: not installed ({COMPILERS[n].about}); install it with: {INSTALL_COMMAND} {n}")
            continue
        m = c.manifest
        lines.append(f"{n}: {c.label}  [{c.about}]")
        lines.append(f"  from {m.get('mirror')} {m.get('suite')}, fetched {m.get('fetched')}, "
                     f"{len(m.get('packages', []))} packages, root {c.root}")
    default = next(iter(all_installed()), None)
    lines.append(f"default for ISA checks: {default.name if default else 'none'}")
    return lines
