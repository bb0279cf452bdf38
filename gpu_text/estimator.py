"""The estimator base: scikit-learn's conventions without depending on scikit-learn.

The rules every trainable object in gpu_text follows (``BPETrainer``, ``DictionaryTrainer``, ``CRF``):

- ``__init__`` takes keyword parameters and stores each one unchanged under its own name: no
  conversion, no validation, no objects built. So :meth:`Estimator.get_params` can read them back
  and ``type(e)(**e.get_params())`` is an unfitted copy of ``e``.
- ``fit`` validates the parameters (a ``ValueError`` naming the parameter), learns, stores what it
  learnt in attributes ending in ``_`` and returns ``self``. Nothing ending in ``_`` exists before.
- Reading a learned attribute before ``fit`` raises :class:`NotFittedError`.

Components that are built rather than learnt (a ``Segmenter`` from its dictionary, a
``PreTokenizer`` from its patterns) are not estimators and use no ``_`` suffix.

>>> class Mean(Estimator):
...     def __init__(self, shift: float = 0.0) -> None:
...         self.shift = shift
...     def fit(self, values: list[float]) -> "Mean":
...         self._require(isinstance(self.shift, (int, float)), "shift", "a number")
...         self.mean_ = sum(values) / len(values) + self.shift
...         return self
>>> m = Mean(shift=1.0)
>>> m, m.get_params()
(Mean(shift=1.0), {'shift': 1.0})
>>> m.mean_
Traceback (most recent call last):
...
gpu_text.estimator.NotFittedError: this Mean is not fitted yet: call fit() before using mean_
>>> type(m)(**m.get_params()).fit([1.0, 3.0]).mean_
3.0
"""
from __future__ import annotations

import inspect
import numbers
from typing import Any


class NotFittedError(ValueError, AttributeError):
    """A learned attribute or a method needing one was used before ``fit``.

    Both a ``ValueError`` and an ``AttributeError`` (as scikit-learn's), so ``hasattr(e, "x_")``
    is simply False on an unfitted estimator.

    >>> issubclass(NotFittedError, AttributeError), issubclass(NotFittedError, ValueError)
    (True, True)
    """


def _is_learned(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_")


def _same(a: Any, b: Any) -> bool:
    """``a == b`` for the plain values parameters hold; False where ``==`` is not a bool (arrays)."""
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


class Estimator:
    """Base class: parameters from the ``__init__`` signature, a readable ``repr``, fitted checks.

    >>> class Scale(Estimator):
    ...     def __init__(self, factor: float = 2.0, inner: Any = None) -> None:
    ...         self.factor, self.inner = factor, inner
    >>> s = Scale(inner=Scale(factor=3.0))
    >>> s.get_params()
    {'factor': 2.0, 'inner': Scale(factor=3.0), 'inner__factor': 3.0, 'inner__inner': None}
    >>> s.set_params(inner__factor=4.0).inner
    Scale(factor=4.0)
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        """The keyword parameters of ``__init__``, in signature order."""
        signature = inspect.signature(cls.__init__)
        for p in signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must name its parameters (no *args/**kwargs)")
        return [name for name in signature.parameters if name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters as stored; with ``deep``, those of parameters that are
        estimators too, as ``name__parameter``.

        >>> class Clip(Estimator):
        ...     def __init__(self, low: float = 0.0, high: float = 1.0) -> None:
        ...         self.low, self.high = low, high
        >>> Clip(high=5.0).get_params()
        {'low': 0.0, 'high': 5.0}
        """
        params = {}
        for name in self._param_names():
            value = getattr(self, name)
            params[name] = value
            if deep and isinstance(value, Estimator):
                params.update((f"{name}__{key}", v) for key, v in value.get_params(deep=True).items())
        return params

    def set_params(self, **params: Any) -> "Estimator":
        """Sets parameters (``name__parameter`` reaches into a parameter that is an estimator);
        an unknown name raises ``ValueError``. Returns ``self``.

        >>> class Clip(Estimator):
        ...     def __init__(self, low: float = 0.0, high: float = 1.0) -> None:
        ...         self.low, self.high = low, high
        >>> Clip().set_params(high=5.0)
        Clip(high=5.0)
        >>> Clip().set_params(middle=1.0)
        Traceback (most recent call last):
        ...
        ValueError: Clip has no parameter 'middle'; its parameters are low, high
        """
        names = self._param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; its parameters are "
                                 f"{', '.join(names)}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            inner = getattr(self, name)
            if not isinstance(inner, Estimator):
                raise ValueError(f"{type(self).__name__}.{name} is not an estimator: cannot set "
                                 f"{', '.join(f'{name}__{k}' for k in sub_params)}")
            inner.set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = {name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items()}
        shown = [f"{name}={getattr(self, name)!r}" for name in self._param_names()
                 if not _same(getattr(self, name), defaults[name])]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: a learned name before fit gets the clear error
        if _is_learned(name) and not self._fitted():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() before using {name}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _fitted(self) -> bool:
        return any(_is_learned(name) for name in vars(self))

    def _check_fitted(self, *names: str) -> None:
        """Raises :class:`NotFittedError` unless ``fit`` has set the learned attributes ``names``
        (any learned attribute when none are named): the check of methods needing them."""
        missing = [name for name in names if name not in vars(self)]
        if missing or not self._fitted():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() first")

    def _require(self, condition: bool, name: str, expected: str) -> None:
        """Raises ``ValueError`` naming parameter ``name`` unless ``condition`` (``fit``'s checks)."""
        if not condition:
            raise ValueError(f"{type(self).__name__}: {name} must be {expected}, got {getattr(self, name)!r}")

    def _require_int(self, name: str, minimum: int) -> None:
        """Raises ``ValueError`` unless parameter ``name`` is an integer (not a bool) ``>= minimum``."""
        value = getattr(self, name)
        self._require(isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum,
                      name, f"an integer >= {minimum}")


__all__ = ["Estimator", "NotFittedError"]
