"""``xl.extra``: Triton's ``tl.extra`` spellings. ``xl.extra.libdevice`` (and ``from
xekern.language.extra import libdevice``) is ``xl.math``: the libdevice-style functions a Triton
kernel calls through ``tl.extra.cuda.libdevice`` or ``tl.extra.libdevice`` (tutorial 07)."""
from . import libdevice  # noqa: F401
