import os
from . import sibling
from .. import parent
from ....... import deep

__all__ = ("A", "f")

"""docstring statement"""

@dec
class A:
    def forward(self, x):
        return x

    @property
    def __init__(self): ...


def f():
    pass


class B(A): forward = None
